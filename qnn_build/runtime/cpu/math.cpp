// Elementwise math beyond the activations: Sin, Cos, Floor, Ceil, Round (half to even), Sign (float32,
// int32, int64), Softsign, Mish, Selu, Celu (float32), and Mod (broadcasting; float32,
// int32/int64, either sign rule). Attribute defaults follow the ONNX spec of each op.
#include <cmath>

#include "broadcast_loop.h"
#include "unary_loop.h"

namespace qnnb {
namespace {

struct MathParams {
    float alpha = 0.f, gamma = 0.f;
};

bool prepare_unary_math(Node& n, std::string& err) {
    const qnnb_dtype t = n.in[0]->dtype;
    const bool int_ok = n.op == "Sign";
    if (!(t == QNNB_FLOAT32 || (int_ok && (t == QNNB_INT32 || t == QNNB_INT64))) || n.out[0]->dtype != t) {
        err = std::string("dtype ") + dtype_name(t) + " is not supported";
        return false;
    }
    if (n.in[0]->numel() != n.out[0]->numel()) {
        err = "input and output sizes differ";
        return false;
    }
    auto& p = n.make_state<MathParams>();
    if (n.op == "Selu") {
        p.alpha = n.params.f("alpha", 1.67326319217681884765625f);
        p.gamma = n.params.f("gamma", 1.05070102214813232421875f);
    }
    if (n.op == "Celu") p.alpha = n.params.f("alpha", 1.f);
    return true;
}

template <class T, class F>
void run_map(Node& n, const ExecContext& ctx, F f) {
    const MathParams p = n.state_as<MathParams>();
    run_unary_map<T>(n, ctx, [p, f](T x) { return f(x, p); });
}

#define MATH_KERNEL(NAME, EXPR)                                                           \
    void run_##NAME(Node& n, const ExecContext& ctx) {                                    \
        run_map<float>(n, ctx, [](float x, const MathParams& p) { (void)p; return EXPR; }); \
    }

inline float softplus(float x) { return x > 20.f ? x : std::log1p(std::exp(x)); }

MATH_KERNEL(sin, std::sin(x))
MATH_KERNEL(cos, std::cos(x))
MATH_KERNEL(floor, std::floor(x))
MATH_KERNEL(ceil, std::ceil(x))
MATH_KERNEL(round, std::nearbyint(x))  // the default rounding mode: half to even, as ONNX Round
MATH_KERNEL(softsign, x / (1.f + std::fabs(x)))
MATH_KERNEL(mish, x * std::tanh(softplus(x)))
MATH_KERNEL(selu, x > 0.f ? p.gamma * x : p.gamma * (p.alpha * std::exp(x) - p.alpha))
MATH_KERNEL(celu, std::fmax(0.f, x) + std::fmin(0.f, p.alpha * (std::exp(x / p.alpha) - 1.f)))

template <class T>
T sign_of(T x) {
    return static_cast<T>((x > T(0)) - (x < T(0)));
}

void run_sign(Node& n, const ExecContext& ctx) {
    switch (n.in[0]->dtype) {
        case QNNB_INT32: run_map<int32_t>(n, ctx, [](int32_t x, const MathParams&) { return sign_of(x); }); break;
        case QNNB_INT64: run_map<int64_t>(n, ctx, [](int64_t x, const MathParams&) { return sign_of(x); }); break;
        default:  // NaN stays NaN
            run_map<float>(n, ctx, [](float x, const MathParams&) { return std::isnan(x) ? x : sign_of(x); });
    }
}

// ---- Mod: fmod=1 keeps the dividend's sign (C's fmod), fmod=0 the divisor's (Python's %) ----

bool prepare_mod(Node& n, std::string& err) {
    const qnnb_dtype t = n.in[0]->dtype;
    if (n.in[1]->dtype != t || n.out[0]->dtype != t || (t != QNNB_FLOAT32 && t != QNNB_INT32 && t != QNNB_INT64)) {
        err = std::string("operands of dtype ") + dtype_name(t) + " are not supported";
        return false;
    }
    std::vector<const Tensor*> ins(n.in.begin(), n.in.end());
    return plan_broadcast(ins, n.out[0]->shape, n.make_state<BroadcastPlan>(), err);
}

template <class T>
T int_mod(T a, T b, bool fmod) {
    if (b == 0) return 0;  // undefined in ONNX; never a trap here
    if (b == -1) return 0;  // also avoids INT_MIN % -1
    T r = a % b;
    if (!fmod && r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

template <class T, class F>
void run_binary_as(Node& n, const ExecContext& ctx, F f) {
    run_broadcast_binary<T, T>(n, ctx, f);
}

void run_mod(Node& n, const ExecContext& ctx) {
    const bool fmod = n.params.i("fmod", 0) == 1;
    switch (n.in[0]->dtype) {
        case QNNB_INT32: run_binary_as<int32_t>(n, ctx, [&](int32_t a, int32_t b) { return int_mod(a, b, fmod); }); break;
        case QNNB_INT64: run_binary_as<int64_t>(n, ctx, [&](int64_t a, int64_t b) { return int_mod(a, b, fmod); }); break;
        default:
            run_binary_as<float>(n, ctx, [&](float a, float b) {
                float r = std::fmod(a, b);
                if (!fmod && r != 0.f && ((r < 0.f) != (b < 0.f))) r += b;  // numpy.mod: the divisor's sign
                return r;
            });
    }
}

const Kernel kKernels[] = {
    {"Sin", prepare_unary_math, run_sin},         {"Cos", prepare_unary_math, run_cos},
    {"Floor", prepare_unary_math, run_floor},     {"Ceil", prepare_unary_math, run_ceil},
    {"Round", prepare_unary_math, run_round},     {"Sign", prepare_unary_math, run_sign},
    {"Softsign", prepare_unary_math, run_softsign}, {"Mish", prepare_unary_math, run_mish},
    {"Selu", prepare_unary_math, run_selu},       {"Celu", prepare_unary_math, run_celu},
    {"Mod", prepare_mod, run_mod},
};

}  // namespace

extern const KernelTable kCpuMathKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace qnnb
