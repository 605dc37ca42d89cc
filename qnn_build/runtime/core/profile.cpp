// Profiling's C API: the level, the finalized schedule's nodes and their times in the last execute
// (api.cpp's execute records them at QNNB_PROFILING_DETAILED). docs/formats.md, profile.json.
#include "graph_impl.h"

namespace {

using qnnb::Node;

const Node* node_at(const qnnb_graph* g, int32_t index) {
    if (!g || index < 0 || static_cast<size_t>(index) >= g->nodes.size()) return nullptr;
    return g->nodes[static_cast<size_t>(index)].get();
}

}  // namespace

extern "C" {

qnnb_status qnnb_graph_set_profiling(qnnb_graph* g, int32_t level) {
    if (!g || level < QNNB_PROFILING_OFF || level > QNNB_PROFILING_DETAILED) return QNNB_ERR_INVALID_ARGUMENT;
    g->profiling = level;
    g->node_ns.clear();  // times of an earlier level are not the next execute's
    return QNNB_OK;
}

int32_t qnnb_graph_num_nodes(const qnnb_graph* g) { return g ? static_cast<int32_t>(g->nodes.size()) : -1; }

qnnb_status qnnb_graph_node(const qnnb_graph* g, int32_t index, const char** name, const char** op_type,
                            const char** fused, int32_t* num_outputs) {
    const Node* n = node_at(g, index);
    if (!n) return QNNB_ERR_INVALID_ARGUMENT;
    if (name) *name = n->name.c_str();
    if (op_type) *op_type = n->op.c_str();
    if (fused) {
        const auto& params = n->params.all();
        const auto it = params.find("fused_activation");  // core/fuse.cpp records the fused op here
        *fused = it != params.end() ? it->second.str.c_str() : "";
    }
    if (num_outputs) *num_outputs = static_cast<int32_t>(n->out.size());
    return QNNB_OK;
}

qnnb_status qnnb_graph_node_output(const qnnb_graph* g, int32_t index, int32_t output, int32_t* tensor_index) {
    const Node* n = node_at(g, index);
    if (!n || !tensor_index || output < 0 || static_cast<size_t>(output) >= n->out.size())
        return QNNB_ERR_INVALID_ARGUMENT;
    *tensor_index = -1;
    for (size_t i = 0; i < g->tensors.size(); ++i)
        if (g->tensors[i].get() == n->out[static_cast<size_t>(output)]) *tensor_index = static_cast<int32_t>(i);
    return QNNB_OK;
}

qnnb_status qnnb_graph_node_times(const qnnb_graph* g, uint64_t* ns, int32_t count) {
    if (!g || !ns || count < 0) return QNNB_ERR_INVALID_ARGUMENT;
    if (static_cast<size_t>(count) != g->nodes.size()) return QNNB_ERR_INVALID_ARGUMENT;
    if (g->node_ns.size() != g->nodes.size()) return QNNB_ERR_STATE;  // no detailed execute yet
    for (size_t i = 0; i < g->node_ns.size(); ++i) ns[i] = g->node_ns[i];
    return QNNB_OK;
}

}  // extern "C"
