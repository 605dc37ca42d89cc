// Unary float32 ops: y[i] = f(x[i]), parameters read once at prepare.
#include <cmath>

#include "../core/fastmath.h"
#include "unary_loop.h"

namespace qnnb {
namespace {

struct UnaryParams {
    float alpha = 0.f, beta = 0.f;
};

bool prepare_unary(Node& n, std::string& err) {
    if (n.in[0]->dtype != QNNB_FLOAT32) {
        err = std::string("input has dtype ") + dtype_name(n.in[0]->dtype) + "; expected float32";
        return false;
    }
    if (n.in[0]->numel() != n.out[0]->numel()) {
        err = "input and output sizes differ";
        return false;
    }
    auto& p = n.make_state<UnaryParams>();
    // Defaults follow the ONNX spec of each op.
    if (n.op == "LeakyRelu") p.alpha = n.params.f("alpha", 0.01f);
    if (n.op == "Elu") p.alpha = n.params.f("alpha", 1.f);
    if (n.op == "HardSigmoid") {
        p.alpha = n.params.f("alpha", 0.2f);
        p.beta = n.params.f("beta", 0.5f);
    }
    if (n.op == "Clip") {
        p.alpha = n.params.f("min", -INFINITY);
        p.beta = n.params.f("max", INFINITY);
    }
    if (n.op == "Gelu") p.alpha = n.params.s("approximate", "none") == "tanh" ? 1.f : 0.f;
    return true;
}

template <class F>
void run_unary(Node& n, const ExecContext& ctx, F f) {
    const UnaryParams p = n.state_as<UnaryParams>();
    run_unary_map<float>(n, ctx, [p, f](float x) { return f(x, p); });
}

#define UNARY_KERNEL(NAME, EXPR)                                                           \
    void run_##NAME(Node& n, const ExecContext& ctx) {                                     \
        run_unary(n, ctx, [](float x, const UnaryParams& p) { (void)p; return EXPR; });    \
    }

UNARY_KERNEL(relu, x > 0.f ? x : 0.f)
UNARY_KERNEL(leaky_relu, x < 0.f ? p.alpha * x : x)
UNARY_KERNEL(elu, x < 0.f ? p.alpha * (std::exp(x) - 1.f) : x)
UNARY_KERNEL(clip, x < p.alpha ? p.alpha : (x > p.beta ? p.beta : x))
UNARY_KERNEL(sigmoid, sigmoid_approx(x))  // vectorises; fused ones alike (core/fuse.cpp)
UNARY_KERNEL(hard_sigmoid, std::fmax(0.f, std::fmin(1.f, p.alpha * x + p.beta)))
UNARY_KERNEL(hard_swish, x * std::fmax(0.f, std::fmin(1.f, x / 6.f + 0.5f)))
UNARY_KERNEL(tanh, std::tanh(x))
UNARY_KERNEL(erf, erf_approx(x))
UNARY_KERNEL(gelu, p.alpha == 0.f
                       ? 0.5f * x * (1.f + erf_approx(x * 0.70710678118654752f))
                       : 0.5f * x * (1.f + tanh_approx(0.79788456080286536f * (x + 0.044715f * x * x * x))))
UNARY_KERNEL(softplus, x > 20.f ? x : std::log1p(std::exp(x)))
UNARY_KERNEL(sqrt, std::sqrt(x))
UNARY_KERNEL(exp, std::exp(x))
UNARY_KERNEL(log, std::log(x))
UNARY_KERNEL(neg, -x)
UNARY_KERNEL(abs, std::fabs(x))
UNARY_KERNEL(reciprocal, 1.f / x)

const Kernel kKernels[] = {
    {"Relu", prepare_unary, run_relu},
    {"LeakyRelu", prepare_unary, run_leaky_relu},
    {"Elu", prepare_unary, run_elu},
    {"Clip", prepare_unary, run_clip},
    {"Sigmoid", prepare_unary, run_sigmoid},
    {"HardSigmoid", prepare_unary, run_hard_sigmoid},
    {"HardSwish", prepare_unary, run_hard_swish},
    {"Tanh", prepare_unary, run_tanh},
    {"Erf", prepare_unary, run_erf},
    {"Gelu", prepare_unary, run_gelu},
    {"Softplus", prepare_unary, run_softplus},
    {"Sqrt", prepare_unary, run_sqrt},
    {"Exp", prepare_unary, run_exp},
    {"Log", prepare_unary, run_log},
    {"Neg", prepare_unary, run_neg},
    {"Abs", prepare_unary, run_abs},
    {"Reciprocal", prepare_unary, run_reciprocal},
};

}  // namespace

extern const KernelTable kCpuActivationKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace qnnb
