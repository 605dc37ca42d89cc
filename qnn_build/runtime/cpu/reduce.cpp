// Reductions in float32: ReduceSum/Mean/Max/Min/Prod/SumSquare/L1/L2/LogSum/LogSumExp over a sorted
// list of axes (an empty list reduces nothing; bool ReduceMax/Min are any/all; int64 ReduceSum counts,
// as a mask's sum cast to int64 does), and ArgMax/ArgMin.
//
// The input's dims are merged into alternating kept/reduced groups; each reduced group is one pass
// over a [outer, R, inner] view, so every inner loop is contiguous. Sums accumulate in double.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "../core/parallel.h"
#include "../core/simd.h"

namespace qnnb {
namespace {

constexpr int kLanes = 16;       // independent accumulators for a contiguous row
constexpr int64_t kBlock = 256;  // columns reduced together along a strided axis

struct Pass {
    int64_t outer = 1, r = 1, inner = 1;
};

struct ReduceState {
    std::vector<Pass> passes;             // innermost reduced group first
    std::vector<float> scratch[2];        // between passes (bool and int64 use their bytes)
    double count = 1.0;                   // reduced elements per output (for the mean)
};

bool prepare_reduce(Node& node, std::string& err) {
    const Tensor* x = node.in[0];
    // Bool is for ReduceMax / ReduceMin (any / all) only.
    const bool is_bool = x->dtype == QNNB_BOOL && (node.op == "ReduceMax" || node.op == "ReduceMin");
    const bool is_int64 = x->dtype == QNNB_INT64 && node.op == "ReduceSum";
    if ((x->dtype != QNNB_FLOAT32 && !is_bool && !is_int64) || node.out[0]->dtype != x->dtype) {
        err = "expects float32 input and output (or bool for ReduceMax/ReduceMin, int64 for ReduceSum)";
        return false;
    }
    const std::vector<int64_t> axes = node.params.ints("axes");
    std::vector<bool> reduced(x->shape.size(), false);
    for (int64_t a : axes) {
        if (a < 0 || a >= x->rank()) {
            err = "axis out of range";
            return false;
        }
        reduced[static_cast<size_t>(a)] = true;
    }
    auto& s = node.make_state<ReduceState>();
    // Alternating groups of merged dims; unit dims change nothing and are skipped.
    std::vector<int64_t> sizes;
    std::vector<bool> kinds;
    for (size_t d = 0; d < x->shape.size(); ++d) {
        if (reduced[d]) s.count *= static_cast<double>(x->shape[d]);
        if (x->shape[d] == 1) continue;
        if (!kinds.empty() && kinds.back() == reduced[d]) {
            sizes.back() *= x->shape[d];
        } else {
            sizes.push_back(x->shape[d]);
            kinds.push_back(reduced[d]);
        }
    }
    for (size_t g = sizes.size(); g-- > 0;) {
        if (!kinds[g]) continue;
        Pass p;
        for (size_t i = 0; i < g; ++i) p.outer *= sizes[i];
        p.r = sizes[g];
        for (size_t i = g + 1; i < sizes.size(); ++i) p.inner *= sizes[i];
        s.passes.push_back(p);
        sizes.erase(sizes.begin() + static_cast<std::ptrdiff_t>(g));
        kinds.erase(kinds.begin() + static_cast<std::ptrdiff_t>(g));
    }
    // Nothing to reduce: one pass over single elements still applies the op's transform (x^2, |x|...).
    if (s.passes.empty()) s.passes.push_back(Pass{1, 1, node.out[0]->numel()});
    for (size_t i = 0; i + 1 < s.passes.size(); ++i)
        s.scratch[i % 2].resize(static_cast<size_t>(s.passes[i].outer * s.passes[i].inner * (is_int64 ? 2 : 1)));
    return true;
}

// Accumulators: init, one input element into an accumulator, two accumulators into one.
struct SumOp {
    using T = double;
    static T init() { return 0.0; }
    static T step(T a, float x) { return a + x; }
    static T combine(T a, T b) { return a + b; }
};
struct IntSumOp {
    using T = int64_t;
    static T init() { return 0; }
    static T step(T a, int64_t x) { return a + x; }
    static T combine(T a, T b) { return a + b; }
};
struct SumSquareOp : SumOp {
    static T step(T a, float x) { return a + static_cast<double>(x) * x; }
};
struct SumAbsOp : SumOp {
    static T step(T a, float x) { return a + std::fabs(x); }
};
struct ProdOp {
    using T = double;
    static T init() { return 1.0; }
    static T step(T a, float x) { return a * x; }
    static T combine(T a, T b) { return a * b; }
};
struct MaxOp {
    using T = float;
    static T init() { return -INFINITY; }
    static T step(T a, float x) { return x > a ? x : a; }
    static T combine(T a, T b) { return step(a, b); }
};
struct MinOp {
    using T = float;
    static T init() { return INFINITY; }
    static T step(T a, float x) { return x < a ? x : a; }
    static T combine(T a, T b) { return step(a, b); }
};

// Bool ReduceMax / ReduceMin: any / all.
struct AnyOp {
    using T = uint8_t;
    static T init() { return 0; }
    static T step(T a, uint8_t x) { return a | x; }
    static T combine(T a, T b) { return a | b; }
};
struct AllOp {
    using T = uint8_t;
    static T init() { return 1; }
    static T step(T a, uint8_t x) { return a & x; }
    static T combine(T a, T b) { return a & b; }
};

// Max / min of a contiguous row. GCC does not vectorise a float max reduction by itself (NaN
// rules), so the kLanes lanes are spelled out as whole registers of the build (core/simd.h: a
// 16-lane type on AVX2 went through memory); lane l is lane l % kF32Lanes of register l / kF32Lanes.
template <bool kMax>
float extreme_row(const float* x, int64_t n) {
    constexpr int64_t kRegs = kLanes / kF32Lanes;
    const float init = kMax ? -INFINITY : INFINITY;
    f32v lane[kRegs];
    for (auto& r : lane) r = splatv(init);
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int64_t q = 0; q < kRegs; ++q) {
            const f32v v = loadv(x + i + q * kF32Lanes);
            lane[q] = (kMax ? v > lane[q] : v < lane[q]) ? v : lane[q];
        }
    float m = init;
    for (; i < n; ++i) m = (kMax ? x[i] > m : x[i] < m) ? x[i] : m;
    for (int l = 0; l < kLanes; ++l) {
        const float v = lane[l / kF32Lanes][l % kF32Lanes];
        m = (kMax ? v > m : v < m) ? v : m;
    }
    return m;
}

// One contiguous row reduced in independent lanes, so the compiler can vectorise it.
template <class Op, class E>
typename Op::T reduce_row(const E* x, int64_t n) {
    if constexpr (std::is_same_v<Op, MaxOp> || std::is_same_v<Op, MinOp>) {
        return extreme_row<std::is_same_v<Op, MaxOp>>(x, n);
    } else {
        using T = typename Op::T;
        T lane[kLanes];
        for (int l = 0; l < kLanes; ++l) lane[l] = Op::init();
        int64_t i = 0;
        for (; i + kLanes <= n; i += kLanes)
            for (int l = 0; l < kLanes; ++l) lane[l] = Op::step(lane[l], x[i + l]);
        T acc = Op::init();
        for (; i < n; ++i) acc = Op::step(acc, x[i]);
        for (int l = 0; l < kLanes; ++l) acc = Op::combine(acc, lane[l]);
        return acc;
    }
}

// Final transforms, applied as the last pass writes the output.
struct NoFinish {
    template <class T>
    T operator()(T a, double) const { return a; }
};
struct MeanFinish {
    double operator()(double a, double count) const { return a / count; }
};
struct SqrtFinish {
    double operator()(double a, double) const { return std::sqrt(a); }
};
struct LogFinish {
    double operator()(double a, double) const { return std::log(a); }
};

template <class Op, class Finish, class E = float>
void reduce_pass(const Pass& p, const E* src, E* dst, double count, const ExecContext& ctx) {
    using T = typename Op::T;
    const Finish finish;
    if (p.inner == 1) {
        parallel_for(ctx, p.outer, [&](int64_t o) {
            dst[o] = static_cast<E>(finish(reduce_row<Op>(src + o * p.r, p.r), count));
        });
        return;
    }
    const int64_t blocks = (p.inner + kBlock - 1) / kBlock;
    parallel_for(ctx, p.outer * blocks, [&](int64_t t) {
        const int64_t o = t / blocks, j0 = (t % blocks) * kBlock;
        const int64_t w = std::min(kBlock, p.inner - j0);
        T acc[kBlock];
        for (int64_t j = 0; j < w; ++j) acc[j] = Op::init();
        const E* x = src + o * p.r * p.inner + j0;
        for (int64_t k = 0; k < p.r; ++k) {
            const E* row = x + k * p.inner;
            for (int64_t j = 0; j < w; ++j) acc[j] = Op::step(acc[j], row[j]);
        }
        E* y = dst + o * p.inner + j0;
        for (int64_t j = 0; j < w; ++j) y[j] = static_cast<E>(finish(acc[j], count));
    });
}

// log(sum(exp(x))) with the maximum taken out first; composes across passes.
void log_sum_exp_pass(const Pass& p, const float* src, float* dst, double, const ExecContext& ctx) {
    parallel_for(ctx, p.outer, [&](int64_t o) {
        const float* x = src + o * p.r * p.inner;
        for (int64_t j = 0; j < p.inner; ++j) {
            float m = -INFINITY;
            for (int64_t k = 0; k < p.r; ++k) m = std::max(m, x[k * p.inner + j]);
            double sum = 0.0;
            if (std::isfinite(m))
                for (int64_t k = 0; k < p.r; ++k) sum += std::exp(static_cast<double>(x[k * p.inner + j]) - m);
            dst[o * p.inner + j] = std::isfinite(m) ? static_cast<float>(m + std::log(sum)) : m;
        }
    });
}

template <class E>
using PassFn = void (*)(const Pass&, const E*, E*, double, const ExecContext&);

// The first pass reads the input with `First`; later passes combine partial results with `Later`;
// the last pass applies `Finish`. `custom`, when given, replaces every pass.
template <class First, class Later, class Finish, class E = float>
void run_reduce_with(Node& node, const ExecContext& ctx, PassFn<E> custom = nullptr) {
    ReduceState& s = node.state_as<ReduceState>();
    const E* src = node.in[0]->in<E>();
    const size_t n = s.passes.size();
    for (size_t i = 0; i < n; ++i) {
        const bool last = i + 1 == n;
        E* dst = last ? node.out[0]->out<E>() : reinterpret_cast<E*>(s.scratch[i % 2].data());
        PassFn<E> fn = custom;
        if (!fn) {
            if (i == 0) fn = last ? reduce_pass<First, Finish, E> : reduce_pass<First, NoFinish, E>;
            else fn = last ? reduce_pass<Later, Finish, E> : reduce_pass<Later, NoFinish, E>;
        }
        fn(s.passes[i], src, dst, s.count, ctx);
        src = dst;
    }
}

void run_sum(Node& n, const ExecContext& c) {
    if (n.in[0]->dtype == QNNB_INT64) run_reduce_with<IntSumOp, IntSumOp, NoFinish, int64_t>(n, c);
    else run_reduce_with<SumOp, SumOp, NoFinish>(n, c);
}
void run_mean(Node& n, const ExecContext& c) { run_reduce_with<SumOp, SumOp, MeanFinish>(n, c); }
void run_max(Node& n, const ExecContext& c) {
    if (n.in[0]->dtype == QNNB_BOOL) run_reduce_with<AnyOp, AnyOp, NoFinish, uint8_t>(n, c);
    else run_reduce_with<MaxOp, MaxOp, NoFinish>(n, c);
}
void run_min(Node& n, const ExecContext& c) {
    if (n.in[0]->dtype == QNNB_BOOL) run_reduce_with<AllOp, AllOp, NoFinish, uint8_t>(n, c);
    else run_reduce_with<MinOp, MinOp, NoFinish>(n, c);
}
void run_prod(Node& n, const ExecContext& c) { run_reduce_with<ProdOp, ProdOp, NoFinish>(n, c); }
void run_sum_square(Node& n, const ExecContext& c) { run_reduce_with<SumSquareOp, SumOp, NoFinish>(n, c); }
void run_l1(Node& n, const ExecContext& c) { run_reduce_with<SumAbsOp, SumOp, NoFinish>(n, c); }
void run_l2(Node& n, const ExecContext& c) { run_reduce_with<SumSquareOp, SumOp, SqrtFinish>(n, c); }
void run_log_sum(Node& n, const ExecContext& c) { run_reduce_with<SumOp, SumOp, LogFinish>(n, c); }
void run_log_sum_exp(Node& n, const ExecContext& c) {
    run_reduce_with<SumOp, SumOp, NoFinish>(n, c, log_sum_exp_pass);
}

// ---- ArgMax / ArgMin over one axis: [outer, R, inner] -> int64 [outer, inner] ----

struct ArgState {
    int64_t outer = 1, r = 1, inner = 1;
    bool last_index = false;  // ties go to the last occurrence
};

bool prepare_arg(Node& node, std::string& err) {
    const Tensor* x = node.in[0];
    if (x->dtype != QNNB_FLOAT32 || node.out[0]->dtype != QNNB_INT64) {
        err = "expects a float32 input and an int64 output";
        return false;
    }
    const int64_t axis = node.params.i("axis", 0);
    if (axis < 0 || axis >= x->rank() || x->dim(static_cast<int>(axis)) == 0) {
        err = "axis out of range or empty";
        return false;
    }
    auto& s = node.make_state<ArgState>();
    for (int64_t d = 0; d < axis; ++d) s.outer *= x->dim(static_cast<int>(d));
    s.r = x->dim(static_cast<int>(axis));
    for (int64_t d = axis + 1; d < x->rank(); ++d) s.inner *= x->dim(static_cast<int>(d));
    s.last_index = node.params.i("select_last_index", 0) != 0;
    return true;
}

// Along a contiguous row: the extreme value first (vectorised), then where it occurs.
template <bool kMax>
int64_t arg_row(const float* x, int64_t n, bool last) {
    const float m = extreme_row<kMax>(x, n);
    if (last) {
        for (int64_t i = n; i-- > 0;)
            if (x[i] == m) return i;
    } else {
        for (int64_t i = 0; i < n; ++i)
            if (x[i] == m) return i;
    }
    return 0;  // only NaNs
}

// `Better(v, best)`: v replaces the current best (strict for the first index, non-strict for the last).
template <class Better>
void arg_pass(const ArgState& s, const float* x, int64_t* y, const ExecContext& ctx) {
    const Better better;
    const int64_t blocks = (s.inner + kBlock - 1) / kBlock;
    parallel_for(ctx, s.outer * blocks, [&](int64_t t) {
        const int64_t o = t / blocks, j0 = (t % blocks) * kBlock;
        const int64_t w = std::min(kBlock, s.inner - j0);
        const float* xo = x + o * s.r * s.inner + j0;
        float best[kBlock];
        int64_t idx[kBlock];
        for (int64_t j = 0; j < w; ++j) {
            best[j] = xo[j];
            idx[j] = 0;
        }
        for (int64_t k = 1; k < s.r; ++k) {
            const float* row = xo + k * s.inner;
            for (int64_t j = 0; j < w; ++j) {
                const bool b = better(row[j], best[j]);
                best[j] = b ? row[j] : best[j];
                idx[j] = b ? k : idx[j];
            }
        }
        int64_t* yo = y + o * s.inner + j0;
        for (int64_t j = 0; j < w; ++j) yo[j] = idx[j];
    });
}

struct Greater { bool operator()(float v, float b) const { return v > b; } };
struct GreaterEq { bool operator()(float v, float b) const { return v >= b; } };
struct Less { bool operator()(float v, float b) const { return v < b; } };
struct LessEq { bool operator()(float v, float b) const { return v <= b; } };

template <bool kMax>
bool run_arg_rows(Node& n, const ExecContext& ctx) {
    const ArgState& s = n.state_as<ArgState>();
    if (s.r == 1) {  // one element along the axis (a detector's single class): index 0, NaN or not
        std::fill_n(n.out[0]->out<int64_t>(), s.outer * s.inner, int64_t{0});
        return true;
    }
    if (s.inner != 1) return false;
    const float* x = n.in[0]->in<float>();
    int64_t* y = n.out[0]->out<int64_t>();
    parallel_for(ctx, s.outer, [&](int64_t o) { y[o] = arg_row<kMax>(x + o * s.r, s.r, s.last_index); });
    return true;
}

void run_argmax(Node& n, const ExecContext& ctx) {
    if (run_arg_rows<true>(n, ctx)) return;
    const ArgState& s = n.state_as<ArgState>();
    if (s.last_index) arg_pass<GreaterEq>(s, n.in[0]->in<float>(), n.out[0]->out<int64_t>(), ctx);
    else arg_pass<Greater>(s, n.in[0]->in<float>(), n.out[0]->out<int64_t>(), ctx);
}

void run_argmin(Node& n, const ExecContext& ctx) {
    if (run_arg_rows<false>(n, ctx)) return;
    const ArgState& s = n.state_as<ArgState>();
    if (s.last_index) arg_pass<LessEq>(s, n.in[0]->in<float>(), n.out[0]->out<int64_t>(), ctx);
    else arg_pass<Less>(s, n.in[0]->in<float>(), n.out[0]->out<int64_t>(), ctx);
}

const Kernel kKernels[] = {
    {"ReduceSum", prepare_reduce, run_sum},
    {"ReduceMean", prepare_reduce, run_mean},
    {"ReduceMax", prepare_reduce, run_max},
    {"ReduceMin", prepare_reduce, run_min},
    {"ReduceProd", prepare_reduce, run_prod},
    {"ReduceSumSquare", prepare_reduce, run_sum_square},
    {"ReduceL1", prepare_reduce, run_l1},
    {"ReduceL2", prepare_reduce, run_l2},
    {"ReduceLogSum", prepare_reduce, run_log_sum},
    {"ReduceLogSumExp", prepare_reduce, run_log_sum_exp},
    {"ArgMax", prepare_arg, run_argmax},
    {"ArgMin", prepare_arg, run_argmin},
};

}  // namespace

extern const KernelTable kCpuReduceKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace qnnb
