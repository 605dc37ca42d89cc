// Reductions on integer codes: docs/npu.md (N24) ReduceMax / ReduceMin (extreme code, then the
// output re-encoding (N20)), (N25) ReduceSum / ReduceMean (integer sum of q - zp_x, requantized;
// the mean's 1 / count is in the multiplier), (N26) ArgMax / ArgMin (on codes, int64 indices),
// (N26a) TopK (the codes themselves, sorted, and their int64 indices).
#include <algorithm>
#include <vector>

#include "../core/parallel.h"
#include "../core/topk.h"
#include "code_table.h"
#include "refusal.h"

namespace qnnb {
namespace npu {
namespace {

enum class Kind { kSum, kMax, kMin };

struct ReduceState {
    Kind kind = Kind::kSum;
    std::vector<int64_t> reduced_offsets;  // input offsets of one output's reduced elements
    std::vector<int64_t> kept_dims, kept_strides;
    int64_t outputs = 1;
    int32_t zp_x = 0, zp_y = 0, qmax = 0, mult = 0, shift = 0;
    ArrayView<int32_t> table;  // Max/Min with a re-encoding: code -> output code (N20)
};

bool prepare_reduce(Node& n, std::string& err) {
    if (!check_int_operand(n.input(0), err) || !check_int_output(n.output(0), err)) return false;
    const Tensor* x = n.in[0];
    const Tensor* y = n.out[0];
    if (x->is_const() || (x->dtype != QNNB_UINT8 && x->dtype != QNNB_UINT16)) {
        err = "input must be an 8- or 16-bit activation";
        return false;
    }
    auto& s = n.make_state<ReduceState>();
    s.kind = n.op == "ReduceMax" ? Kind::kMax : n.op == "ReduceMin" ? Kind::kMin : Kind::kSum;
    std::vector<bool> reduced(x->shape.size(), false);
    for (int64_t a : n.params.ints("axes")) {
        if (a < 0 || a >= x->rank()) {
            err = "axis out of range";
            return false;
        }
        reduced[static_cast<size_t>(a)] = true;
    }
    std::vector<int64_t> strides(x->shape.size(), 1);
    for (int d = x->rank() - 2; d >= 0; --d) strides[d] = strides[d + 1] * x->dim(d + 1);
    s.reduced_offsets = {0};
    for (int d = 0; d < x->rank(); ++d) {
        if (!reduced[d]) {
            s.kept_dims.push_back(x->dim(d));
            s.kept_strides.push_back(strides[d]);
            s.outputs *= x->dim(d);
            continue;
        }
        std::vector<int64_t> next;
        next.reserve(s.reduced_offsets.size() * static_cast<size_t>(x->dim(d)));
        for (int64_t off : s.reduced_offsets)
            for (int64_t i = 0; i < x->dim(d); ++i) next.push_back(off + i * strides[d]);
        s.reduced_offsets.swap(next);
    }
    if (s.outputs != y->numel()) {
        err = "output size does not match the reduced input";
        return false;
    }
    s.zp_x = zero_point(*x);
    s.zp_y = zero_point(*y);
    s.qmax = qmax_of(*y);
    if (!int_params(n, "npu_mult", 1, &s.mult, err) || !int_params(n, "npu_shift", 1, &s.shift, err)) return false;
    const bool same = x->dtype == y->dtype && x->encoding.scales == y->encoding.scales &&
                      x->encoding.offsets == y->encoding.offsets;
    if (s.kind != Kind::kSum && !same) s.table = recode_table(n, 0, *x, *y, s.mult, s.shift);
    return true;
}

template <class TX, class TY>
void reduce_typed(const ReduceState& s, const TX* x, TY* y, const ExecContext& ctx) {
    const int64_t* roff = s.reduced_offsets.data();
    const int64_t count = static_cast<int64_t>(s.reduced_offsets.size());
    const size_t kept = s.kept_dims.size();
    parallel_for(ctx, s.outputs, [&](int64_t o) {
        int64_t base = 0;
        for (size_t d = kept, rem = static_cast<size_t>(o); d-- > 0;) {
            base += static_cast<int64_t>(rem % static_cast<size_t>(s.kept_dims[d])) * s.kept_strides[d];
            rem /= static_cast<size_t>(s.kept_dims[d]);
        }
        const TX* xb = x + base;
        if (s.kind == Kind::kSum) {
            int64_t acc = 0;  // count x 65535: int64
            for (int64_t j = 0; j < count; ++j) acc += xb[roff[j]];
            acc -= count * s.zp_x;
            y[o] = static_cast<TY>(requantize_out_fast(acc, s.mult, s.shift, s.zp_y, s.qmax));
            return;
        }
        TX m = xb[roff[0]];
        if (s.kind == Kind::kMax) {
            for (int64_t j = 1; j < count; ++j) m = xb[roff[j]] > m ? xb[roff[j]] : m;
        } else {
            for (int64_t j = 1; j < count; ++j) m = xb[roff[j]] < m ? xb[roff[j]] : m;
        }
        y[o] = static_cast<TY>(s.table.empty() ? m : s.table[m]);
    });
}

void run_reduce(Node& n, const ExecContext& ctx) {
    const ReduceState& s = n.state_as<ReduceState>();
    if (s.outputs == 0 || s.reduced_offsets.empty()) return;
    with_int_type(n.in[0]->dtype, [&](auto tx) {
        with_int_type(n.out[0]->dtype, [&](auto ty) {
            using TX = decltype(tx);
            using TY = decltype(ty);
            reduce_typed<TX, TY>(s, n.in[0]->in<TX>(), n.out[0]->out<TY>(), ctx);
        });
    });
}

// ---- ArgMax / ArgMin over [outer, n, inner] --------------------------------------------------

struct ArgState {
    int64_t outer = 1, n = 1, inner = 1;
    bool last = false;
};

// ArgMax, ArgMin and TopK compare the codes of one 8- or 16-bit activation.
const Tensor* activation_input(Node& n, std::string& err) {
    if (!check_int_operand(n.input(0), err)) return nullptr;
    const Tensor* x = n.in[0];
    if (x->is_const() || (x->dtype != QNNB_UINT8 && x->dtype != QNNB_UINT16)) {
        err = "input must be an 8- or 16-bit activation";
        return nullptr;
    }
    return x;
}

bool prepare_arg(Node& n, std::string& err) {
    const Tensor* x = activation_input(n, err);
    if (!x) return false;
    if (!n.output(0) || n.out[0]->dtype != QNNB_INT64) {
        err = "output must be int64";
        return false;
    }
    const int64_t axis = n.params.i("axis", 0);
    if (axis < 0 || axis >= x->rank() || x->dim(static_cast<int>(axis)) == 0) {
        err = "axis out of range or empty";
        return false;
    }
    auto& s = n.make_state<ArgState>();
    for (int d = 0; d < axis; ++d) s.outer *= x->dim(d);
    s.n = x->dim(static_cast<int>(axis));
    for (int d = static_cast<int>(axis) + 1; d < x->rank(); ++d) s.inner *= x->dim(d);
    s.last = n.params.i("select_last_index", 0) != 0;
    if (n.out[0]->numel() != s.outer * s.inner) {
        err = "output size does not match the input";
        return false;
    }
    return true;
}

// Ties (equal codes) go to the first index, or the last with select_last_index.
template <bool kMax, class TX>
void arg_typed(const ArgState& s, const TX* x, int64_t* y, const ExecContext& ctx) {
    parallel_for(ctx, s.outer, [&](int64_t o) {
        for (int64_t j = 0; j < s.inner; ++j) {
            const TX* xp = x + o * s.n * s.inner + j;
            TX best = xp[0];
            int64_t at = 0;
            for (int64_t i = 1; i < s.n; ++i) {
                const TX v = xp[i * s.inner];
                const bool better = kMax ? (s.last ? v >= best : v > best) : (s.last ? v <= best : v < best);
                if (better) {
                    best = v;
                    at = i;
                }
            }
            y[o * s.inner + j] = at;
        }
    });
}

template <bool kMax>
void run_arg(Node& n, const ExecContext& ctx) {
    const ArgState& s = n.state_as<ArgState>();
    int64_t* y = n.out[0]->out<int64_t>();
    if (n.in[0]->dtype == QNNB_UINT8) arg_typed<kMax>(s, n.in[0]->in<uint8_t>(), y, ctx);
    else arg_typed<kMax>(s, n.in[0]->in<uint16_t>(), y, ctx);
}

// ---- TopK: the k largest (smallest) codes, sorted (N26a) -------------------------------------

bool prepare_topk(Node& n, std::string& err) {
    const Tensor* x = activation_input(n, err);
    if (!x) return false;
    if (n.out.size() != 2 || (n.out[1] && n.out[1]->dtype != QNNB_INT64)) {
        err = "outputs must be the values and int64 indices";
        return false;
    }
    if (n.out[0] && !same_encoding(*x, *n.out[0])) {  // the quantizer's VALUE_KEEPERS rule
        err = "the values must keep the input's encoding";
        return false;
    }
    return read_topk(n, *x, n.make_state<TopKShape>(), err);
}

// A larger code is a larger value (the scale is positive), equal codes are equal values: the order
// of the float kernel on the dequantized values.
template <class TX>
void run_topk_as(Node& n, const ExecContext& ctx) {
    topk_rows(n.state_as<TopKShape>(), n.in[0]->in<TX>(), n.out[0] ? n.out[0]->out<TX>() : nullptr,
              n.out[1] ? n.out[1]->out<int64_t>() : nullptr, ctx);
}

void run_topk(Node& n, const ExecContext& ctx) {
    if (n.in[0]->dtype == QNNB_UINT8) run_topk_as<uint8_t>(n, ctx);
    else run_topk_as<uint16_t>(n, ctx);
}

const Kernel kKernels[] = {
    {"TopK", prepare_topk, run_topk},
    {"ReduceSum", prepare_reduce, run_reduce}, {"ReduceMean", prepare_reduce, run_reduce},
    {"ReduceMax", prepare_reduce, run_reduce}, {"ReduceMin", prepare_reduce, run_reduce},
    {"ArgMax", prepare_arg, run_arg<true>},    {"ArgMin", prepare_arg, run_arg<false>},
    {"ReduceProd", refuse, run_nothing},       {"ReduceSumSquare", refuse, run_nothing},
    {"ReduceL1", refuse, run_nothing},         {"ReduceL2", refuse, run_nothing},
    {"ReduceLogSum", refuse, run_nothing},     {"ReduceLogSumExp", refuse, run_nothing},
};

}  // namespace

extern const KernelTable kNpuReduceKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace npu
}  // namespace qnnb
