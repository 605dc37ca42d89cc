// Fusion at finalize (cpu, the float backend): a Conv, Gemm or MatMul whose output only feeds an
// activation writes the activation's output itself, the activation applied as its last step
// (Node::fused). The intermediate tensor is then never written and takes no arena bytes. The
// activations: Relu, Clip, Sigmoid, HardSigmoid, HardSwish, and SiLU, a Sigmoid whose output and
// input a Mul multiplies (YOLO's Conv + Sigmoid + Mul). Only unencoded float32 intermediates: an
// encoded one is rounded between the ops, which fusing would skip. Each activation is its kernel's
// own expression (cpu/activation.cpp, core/fastmath.h), so the bytes are the same.
// A context binary stores the fused schedule (the node's `fused_activation` parameters).
#include <cmath>
#include <map>

#include "fastmath.h"
#include "graph_impl.h"
#include "isa.h"

namespace qnnb {

namespace {

bool producer_op(const std::string& op) { return op == "Conv" || op == "Gemm" || op == "MatMul"; }

bool single_activation(const std::string& op) {
    return op == "Relu" || op == "Clip" || op == "Sigmoid" || op == "HardSigmoid" || op == "HardSwish";
}

// A float32 node that reads only `in` and writes one output of its size.
bool elementwise_of(const Node& a, const Tensor* in) {
    return a.in.size() == 1 && a.in[0] == in && a.out.size() == 1 && a.out[0] && a.out[0]->dtype == QNNB_FLOAT32 &&
           a.out[0]->numel() == in->numel();
}

Param floats_param(std::vector<float> v) {
    Param p;
    p.kind = QNNB_PARAM_FLOATS;
    p.floats = std::move(v);
    return p;
}

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
        if (mid->dtype != QNNB_FLOAT32 || mid->encoding.present() || k + 1 >= g->nodes.size()) continue;
        // The readers must come right after the producer: the schedule stays in order.
        Node& a = *g->nodes[k + 1];
        Param kind;
        kind.kind = QNNB_PARAM_STRING;
        if (readers[mid] == 1 && single_activation(a.op) && elementwise_of(a, mid)) {
            kind.str = a.op;
            if (a.op == "Clip") p.params.set("fused_range", floats_param({a.params.f("min", -INFINITY), a.params.f("max", INFINITY)}));
            if (a.op == "HardSigmoid") p.params.set("fused_range", floats_param({a.params.f("alpha", 0.2f), a.params.f("beta", 0.5f)}));
            p.out[0] = a.out[0];
            g->nodes[k + 1].reset();  // the activation node is gone
        } else if (readers[mid] == 2 && a.op == "Sigmoid" && elementwise_of(a, mid) && readers[a.out[0]] == 1 &&
                   !a.out[0]->encoding.present() && k + 2 < g->nodes.size()) {
            Node& m = *g->nodes[k + 2];  // SiLU: Mul(mid, sigmoid(mid)), either operand order
            const Tensor* s = a.out[0];
            const bool pair = m.in.size() == 2 && ((m.in[0] == mid && m.in[1] == s) || (m.in[0] == s && m.in[1] == mid));
            if (m.op != "Mul" || !pair || m.out.size() != 1 || !m.out[0] || m.out[0]->dtype != QNNB_FLOAT32 ||
                m.out[0]->numel() != mid->numel())
                continue;
            kind.str = "SiLU";
            p.out[0] = m.out[0];
            g->nodes[k + 1].reset();
            g->nodes[k + 2].reset();
        } else {
            continue;
        }
        p.params.set("fused_activation", kind);
    }
    g->nodes = std::move(kept);
}

void read_fused(Node& n) {
    n.fused_in_kernel = false;  // until the kernel's prepare says it applies the activation itself
    const std::string kind = n.params.s("fused_activation");
    n.fused = kind == "Relu" ? Node::kFusedRelu : kind == "Clip" ? Node::kFusedClip
            : kind == "Sigmoid" ? Node::kFusedSigmoid : kind == "HardSigmoid" ? Node::kFusedHardSigmoid
            : kind == "HardSwish" ? Node::kFusedHardSwish : kind == "SiLU" ? Node::kFusedSilu : Node::kFusedNone;
    if (n.fused == Node::kFusedClip || n.fused == Node::kFusedHardSigmoid) {
        std::vector<float> r = n.params.floats("fused_range");
        const bool clip = n.fused == Node::kFusedClip;
        n.fused_lo = r.size() == 2 ? r[0] : (clip ? -INFINITY : 0.2f);
        n.fused_hi = r.size() == 2 ? r[1] : (clip ? INFINITY : 0.5f);
    }
}

void run_fused(const Node& n) {
    Tensor* t = n.out[0];
    if (n.fused == Node::kFusedNone || !t || t->dtype != QNNB_FLOAT32) return;
#if QNNB_HAS_AVX512_PATHS
    if (active_isa() == Isa::kAvx512Vnni) return apply_fused_avx512(n, t->out<float>(), t->numel());
#endif
    apply_fused(n, t->out<float>(), t->numel());
}

namespace {
namespace base {
#include "fused_loops.inc"
}  // namespace base
}  // namespace

#if QNNB_HAS_AVX512_PATHS
QNNB_AVX512_BEGIN
namespace {
namespace avx512 {
#include "fused_loops.inc"
}  // namespace avx512
}  // namespace
QNNB_AVX512_END
void apply_fused_avx512(const Node& n, float* y, int64_t total) { avx512::activate(n, y, total); }
#endif

void apply_fused(const Node& n, float* y, int64_t total) { base::activate(n, y, total); }

}  // namespace qnnb
