// Fusion at finalize (cpu, the float backend): a Conv, Gemm or MatMul whose output only feeds a
// Relu or Clip writes the activation's output itself, the activation applied as its last step
// (Node::fused). The intermediate tensor is then never written and takes no arena bytes. Only
// unencoded float32 intermediates: an encoded one is rounded between the two ops, which fusing
// would skip. The activation is the Relu/Clip kernels' own expression, so the bytes are the same.
// A context binary stores the fused schedule (the node's `fused_activation` parameters).
#include <cmath>
#include <map>

#include "graph_impl.h"

namespace qnnb {

namespace {

bool producer_op(const std::string& op) { return op == "Conv" || op == "Gemm" || op == "MatMul"; }

}  // namespace

void fuse_activations(qnnb_graph* g) {
    if (!g->backend->float_simulation || g->keep_tensors) return;
    std::map<const Tensor*, int> readers;
    for (const auto& n : g->nodes)
        for (const Tensor* t : n->in)
            if (t) ++readers[t];
    for (const Tensor* t : g->outputs) readers[t] += 2;  // a graph output is never fused away
    std::vector<std::unique_ptr<Node>> kept;
    for (size_t k = 0; k < g->nodes.size(); ++k) {
        std::unique_ptr<Node>& n = g->nodes[k];
        if (!n) continue;
        kept.push_back(std::move(n));
        Node& p = *kept.back();
        if (!producer_op(p.op) || p.out.size() != 1 || !p.out[0] || p.params.has("fused_activation")) continue;
        Tensor* mid = p.out[0];
        if (mid->dtype != QNNB_FLOAT32 || mid->encoding.present() || readers[mid] != 1 || k + 1 >= g->nodes.size())
            continue;
        Node& a = *g->nodes[k + 1];  // the reader must come right after: the schedule stays in order
        if ((a.op != "Relu" && a.op != "Clip") || a.in.size() != 1 || a.in[0] != mid || a.out.size() != 1 ||
            !a.out[0] || a.out[0]->dtype != QNNB_FLOAT32 || a.out[0]->numel() != mid->numel())
            continue;
        Param kind;
        kind.kind = QNNB_PARAM_STRING;
        kind.str = a.op;
        p.params.set("fused_activation", kind);
        if (a.op == "Clip") {
            Param range;
            range.kind = QNNB_PARAM_FLOATS;
            range.floats = {a.params.f("min", -INFINITY), a.params.f("max", INFINITY)};
            p.params.set("fused_range", range);
        }
        p.out[0] = a.out[0];
        g->nodes[k + 1].reset();  // the activation node is gone
    }
    g->nodes = std::move(kept);
}

void read_fused(Node& n) {
    const std::string kind = n.params.s("fused_activation");
    n.fused = kind == "Relu" ? Node::kFusedRelu : kind == "Clip" ? Node::kFusedClip : Node::kFusedNone;
    if (n.fused == Node::kFusedClip) {
        std::vector<float> r = n.params.floats("fused_range");
        n.fused_lo = r.size() == 2 ? r[0] : -INFINITY;
        n.fused_hi = r.size() == 2 ? r[1] : INFINITY;
    }
}

// The same expressions as the Relu and Clip kernels (cpu/activation.cpp).
void run_fused(const Node& n) {
    Tensor* t = n.out[0];
    if (n.fused == Node::kFusedNone || !t || t->dtype != QNNB_FLOAT32) return;
    float* y = t->out<float>();
    const int64_t total = t->numel();
    if (n.fused == Node::kFusedRelu) {
        for (int64_t i = 0; i < total; ++i) y[i] = y[i] > 0.f ? y[i] : 0.f;
    } else {
        const float lo = n.fused_lo, hi = n.fused_hi;
        for (int64_t i = 0; i < total; ++i) y[i] = y[i] < lo ? lo : (y[i] > hi ? hi : y[i]);
    }
}

}  // namespace qnnb
