// Broadcasting elementwise ops in float32: Add, Sub, Mul, Div, Pow, Min, Max, PRelu; Add, Sub, Mul,
// Div, Min, Max also on int32/int64 (index arithmetic: a token id, a top-k index // classes);
// Where (any dtype). (Variadic Sum/Min/Max are lowered by the converter to chains of two-input nodes.)
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "broadcast_loop.h"

namespace qnnb {
namespace {

bool require_float(const Node& n, std::string& err) {
    for (const Tensor* t : n.in)
        if (t && t->dtype != QNNB_FLOAT32) {
            err = std::string("tensor '") + t->name + "' has dtype " + dtype_name(t->dtype) + "; expected float32";
            return false;
        }
    return true;
}

bool is_int(const Node& n) {
    const qnnb_dtype t = n.in[0]->dtype;
    return t == QNNB_INT32 || t == QNNB_INT64;
}

bool prepare_broadcast(Node& n, std::string& err) {
    const bool int_op = n.op == "Add" || n.op == "Sub" || n.op == "Mul" || n.op == "Div" || n.op == "Min" ||
                        n.op == "Max";
    if (int_op && is_int(n)) {
        const qnnb_dtype t = n.in[0]->dtype;
        if (n.in[1]->dtype != t || n.out[0]->dtype != t) {
            err = "operands and output must have one dtype";
            return false;
        }
    } else if (!require_float(n, err)) {
        return false;
    }
    std::vector<const Tensor*> ins(n.in.begin(), n.in.end());
    return plan_broadcast(ins, n.out[0]->shape, n.make_state<BroadcastPlan>(), err);
}

// Runs `f(a, b)` over two broadcast inputs; the innermost loop has fixed strides so the compiler
// can vectorize its common case (both contiguous, or one a scalar).
template <class F>
void run_binary(Node& n, const ExecContext& ctx, F f) {
    const BroadcastPlan& p = n.state_as<BroadcastPlan>();
    const float* a = n.in[0]->in<float>();
    const float* b = n.in[1]->in<float>();
    float* y = n.out[0]->out<float>();
    const int64_t inner = p.inner, sa = p.inner_stride[0], sb = p.inner_stride[1];
    parallel_for(ctx, p.outer, [&](int64_t row) {
        int64_t off[2];
        p.offsets(row, off);
        const float* pa = a + off[0];
        const float* pb = b + off[1];
        float* py = y + row * inner;
        if (sa == 1 && sb == 1) {
            for (int64_t i = 0; i < inner; ++i) py[i] = f(pa[i], pb[i]);
        } else if (sa == 1) {
            const float vb = pb[0];
            for (int64_t i = 0; i < inner; ++i) py[i] = f(pa[i], vb);
        } else if (sb == 1) {
            const float va = pa[0];
            for (int64_t i = 0; i < inner; ++i) py[i] = f(va, pb[i]);
        } else {
            const float v = f(pa[0], pb[0]);
            for (int64_t i = 0; i < inner; ++i) py[i] = v;
        }
    });
}

#define BINARY_KERNEL(NAME, EXPR)                                                      \
    void run_##NAME(Node& n, const ExecContext& ctx) {                                 \
        run_binary(n, ctx, [](float a, float b) { return EXPR; });                     \
    }

// Integers wrap on overflow (two's complement, as onnxruntime) and truncate on division.
template <class T>
using Unsigned = std::make_unsigned_t<T>;
template <class T>
T int_add(T a, T b) { return static_cast<T>(Unsigned<T>(a) + Unsigned<T>(b)); }
template <class T>
T int_sub(T a, T b) { return static_cast<T>(Unsigned<T>(a) - Unsigned<T>(b)); }
template <class T>
T int_mul(T a, T b) { return static_cast<T>(Unsigned<T>(a) * Unsigned<T>(b)); }
template <class T>
T int_div(T a, T b) {
    if (b == 0) return 0;  // undefined in ONNX; never a trap here
    if (b == -1) return int_sub(T(0), a);  // INT_MIN / -1 wraps instead of trapping
    return a / b;
}

template <class F>
void run_int(Node& n, const ExecContext& ctx, F f) {
    if (n.in[0]->dtype == QNNB_INT32)
        run_broadcast_binary<int32_t, int32_t>(n, ctx, [&](int32_t a, int32_t b) { return f(a, b); });
    else
        run_broadcast_binary<int64_t, int64_t>(n, ctx, [&](int64_t a, int64_t b) { return f(a, b); });
}

#define INT_OR_FLOAT_KERNEL(NAME, FLOAT_EXPR, INT_EXPR)                                \
    void run_##NAME(Node& n, const ExecContext& ctx) {                                 \
        if (is_int(n))                                                                 \
            run_int(n, ctx, [](auto a, auto b) { return INT_EXPR; });                  \
        else                                                                           \
            run_binary(n, ctx, [](float a, float b) { return FLOAT_EXPR; });           \
    }

INT_OR_FLOAT_KERNEL(add, a + b, int_add(a, b))
INT_OR_FLOAT_KERNEL(sub, a - b, int_sub(a, b))
INT_OR_FLOAT_KERNEL(mul, a* b, int_mul(a, b))
INT_OR_FLOAT_KERNEL(div, a / b, int_div(a, b))
// Pow by a constant 2 (LayerNorm's variance written out) as a product, which vectorises.
void run_pow(Node& n, const ExecContext& ctx) {
    const Tensor* e = n.in[1];
    if (e->is_const() && e->numel() == 1 && e->in<float>()[0] == 2.f)
        run_binary(n, ctx, [](float a, float) { return a * a; });
    else
        run_binary(n, ctx, [](float a, float b) { return std::pow(a, b); });
}
// ONNX Min/Max propagate NaN.
INT_OR_FLOAT_KERNEL(min, (std::isnan(a) || std::isnan(b)) ? NAN : std::min(a, b), std::min(a, b))
INT_OR_FLOAT_KERNEL(max, (std::isnan(a) || std::isnan(b)) ? NAN : std::max(a, b), std::max(a, b))
BINARY_KERNEL(prelu, a < 0.f ? a * b : a)

// Where moves elements: any value dtype, by element size.
template <class T>
void run_where_as(Node& n, const ExecContext& ctx) {
    const BroadcastPlan& p = n.state_as<BroadcastPlan>();
    const uint8_t* c = n.in[0]->in<uint8_t>();
    const T* a = n.in[1]->in<T>();
    const T* b = n.in[2]->in<T>();
    T* y = n.out[0]->out<T>();
    parallel_for(ctx, p.outer, [&](int64_t row) {
        int64_t off[3];
        p.offsets(row, off);
        T* py = y + row * p.inner;
        for (int64_t i = 0; i < p.inner; ++i) {
            py[i] = c[off[0] + i * p.inner_stride[0]] ? a[off[1] + i * p.inner_stride[1]]
                                                      : b[off[2] + i * p.inner_stride[2]];
        }
    });
}

void run_where(Node& n, const ExecContext& ctx) {
    switch (dtype_size(n.out[0]->dtype)) {
        case 1: run_where_as<uint8_t>(n, ctx); break;
        case 2: run_where_as<uint16_t>(n, ctx); break;
        case 8: run_where_as<uint64_t>(n, ctx); break;
        default: run_where_as<uint32_t>(n, ctx);
    }
}

bool prepare_where(Node& n, std::string& err) {
    if (n.in[0]->dtype != QNNB_BOOL) {
        err = "condition must be bool";
        return false;
    }
    if (n.in[1]->dtype != n.in[2]->dtype || n.out[0]->dtype != n.in[1]->dtype || n.out[0]->dtype == QNNB_INT4) {
        err = "the two values and the output must have one dtype";
        return false;
    }
    std::vector<const Tensor*> ins(n.in.begin(), n.in.end());
    return plan_broadcast(ins, n.out[0]->shape, n.make_state<BroadcastPlan>(), err);
}

const Kernel kKernels[] = {
    {"Add", prepare_broadcast, run_add},     {"Sub", prepare_broadcast, run_sub},
    {"Mul", prepare_broadcast, run_mul},     {"Div", prepare_broadcast, run_div},
    {"Pow", prepare_broadcast, run_pow},     {"Min", prepare_broadcast, run_min},
    {"Max", prepare_broadcast, run_max},     {"PRelu", prepare_broadcast, run_prelu},
    {"Where", prepare_where, run_where},
};

}  // namespace

extern const KernelTable kCpuElementwiseKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace qnnb
