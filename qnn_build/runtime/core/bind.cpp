// The second half of finalize, shared by a composed graph and a loaded context binary: input
// copies, the memory plan and its one arena, kernels found and prepared, their shared scratch.
// Both paths run exactly this on the same finalized graph, so their outputs are the same bytes.
#include <algorithm>

#include "graph_impl.h"


namespace qnnb {

bool rounds_activation(const qnnb_graph* g, const Tensor* t) {
    if (!t || t->is_const() || t->dtype != QNNB_FLOAT32 || !t->encoding.present()) return false;
    return g->backend->float_simulation || t->encoding.kind == QNNB_ENCODING_FP16;
}

bool stores_integers(const Tensor* t) {
    return !t->is_const() && (t->dtype == QNNB_UINT8 || t->dtype == QNNB_UINT16) && t->encoding.present();
}

qnnb_status bind_graph(qnnb_graph* g) {
    for (Tensor* t : g->inputs) {
        void* copy = nullptr;
        if (rounds_activation(g, t) || stores_integers(t)) {
            copy = aligned_alloc64(t->nbytes());
            if (!copy) return g->fail(QNNB_ERR_OUT_OF_MEMORY, "out of memory for '" + t->name + "'");
            g->buffers.push_back(copy);
        }
        g->input_copies.push_back(copy);
    }
    if (g->arena_offsets.size() != g->tensors.size()) {
        npu::code_chain_roots(g, g->held_to);
        plan_memory(g);
    }
    char* arena = static_cast<char*>(aligned_alloc64(g->arena_bytes));
    if (!arena) return g->fail(QNNB_ERR_OUT_OF_MEMORY, "out of memory for the activation arena");
    g->buffers.push_back(arena);
    for (size_t i = 0; i < g->tensors.size(); ++i)
        if (g->arena_offsets[i] >= 0) g->tensors[i]->data = arena + g->arena_offsets[i];
    for (size_t i = 0; i < g->nodes.size(); ++i) {
        Node* node = g->nodes[i].get();
        node->kernel = g->backend->find_kernel(*node);
        if (!node->kernel)
            return g->fail(QNNB_ERR_UNSUPPORTED, "node '" + node->name + "' (" + node->op +
                                                     "): no " + g->backend->name + " kernel for this op" +
                                                     (g->backend->float_simulation ? "" :
                                                      " (convert with --float-fallback to keep such nodes in fp16)"));
        qnnb::read_fused(*node);
        std::string err;
        g->prepared.begin_node(static_cast<uint32_t>(i));
        node->prepared = &g->prepared;
        const bool ok = node->kernel->prepare(*node, err);
        node->prepared = nullptr;
        if (!ok) return g->fail(QNNB_ERR_UNSUPPORTED, "node '" + node->name + "' (" + node->op + "): " + err);
        if (!g->prepared.error().empty())
            return g->fail(QNNB_ERR_BAD_CONTEXT, "context binary refused: node '" + node->name + "' (" + node->op +
                                                     "): " + g->prepared.error());
        g->scratch_bytes = std::max(g->scratch_bytes, node->scratch_bytes);
    }
    if (g->scratch_bytes) {
        void* scratch = aligned_alloc64(g->scratch_bytes);
        if (!scratch) return g->fail(QNNB_ERR_OUT_OF_MEMORY, "out of memory for the kernels' scratch");
        g->buffers.push_back(scratch);
        for (auto& node : g->nodes)
            if (node->scratch_bytes) node->scratch = scratch;
    }
    npu::fold_code_chains(g);
    g->finalized = true;
    return QNNB_OK;
}

}  // namespace qnnb
