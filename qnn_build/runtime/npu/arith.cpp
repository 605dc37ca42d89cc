// The remaining elementwise ops on integer codes, with broadcasting: docs/npu.md (N30) Div,
// (N31) Min / Max / Where (operands re-encoded to the output first), (N32) PRelu, (N33) Pow with
// a constant exponent of 2 (a product, as Mul), 1 (a re-encoding) or 0.5 (an exact integer sqrt).
#include <algorithm>
#include <vector>

#include "../core/broadcast.h"
#include "../core/parallel.h"
#include "code_table.h"
#include "int_math.h"
#include "refusal.h"

namespace qnnb {
namespace npu {
namespace {

enum class Op { kDiv, kMin, kMax, kWhere, kPRelu };

struct ArithState {
    Op op = Op::kDiv;
    BroadcastPlan plan;
    int32_t zp[3] = {0, 0, 0};      // of the broadcast inputs (Where: the condition's is unused)
    int32_t zp_y = 0, qmax = 0, div_shift = 0;
    int32_t mult[2] = {0, 0}, shift[2] = {0, 0};
    // Div, Min, Max, PRelu of an 8-bit activation and a one-element constant (x / 1.41): y is a
    // function of x's code, tabulated at prepare by the same row loop. `varying`: x's input index.
    int varying = -1;
    std::vector<int32_t> table;
};

// (N30): n / d rounded to nearest, halves toward +inf (of the quotient's sign-normalised form).
inline int64_t div_round(int64_t n, int64_t d) {
    if (d < 0) {
        n = -n;
        d = -d;
    }
    return floor_div(2 * n + d, 2 * d);  // |n| < 2^61
}

void tabulate(Node& n, ArithState& s);

bool prepare_arith(Node& n, std::string& err) {
    if (refused(n, err)) return false;
    auto& s = n.make_state<ArithState>();
    s.op = n.op == "Div" ? Op::kDiv : n.op == "Min" ? Op::kMin : n.op == "Max" ? Op::kMax
         : n.op == "Where" ? Op::kWhere : Op::kPRelu;
    const size_t first = s.op == Op::kWhere ? 1 : 0;
    if (n.in.size() != first + 2) {
        err = "expected " + std::to_string(first + 2) + " inputs";
        return false;
    }
    if (s.op == Op::kWhere && (!n.in[0] || n.in[0]->dtype != QNNB_BOOL)) {
        err = "condition must be bool";
        return false;
    }
    for (size_t i = first; i < n.in.size(); ++i)
        if (!check_int_operand(n.in[i], err)) return false;
    if (!check_int_output(n.output(0), err)) return false;
    std::vector<const Tensor*> ins(n.in.begin(), n.in.end());
    if (!plan_broadcast(ins, n.out[0]->shape, s.plan, err)) return false;
    for (size_t i = first; i < n.in.size(); ++i) s.zp[i] = zero_point(*n.in[i]);
    s.zp_y = zero_point(*n.out[0]);
    s.qmax = qmax_of(*n.out[0]);
    const size_t k = s.op == Op::kDiv ? 1 : 2;
    if (!int_params(n, "npu_mult", k, s.mult, err) || !int_params(n, "npu_shift", k, s.shift, err)) return false;
    s.div_shift = static_cast<int32_t>(n.params.i("npu_div_shift", 0));
    if (s.div_shift < 0 || s.div_shift > 44) {
        err = "npu_div_shift out of range";
        return false;
    }
    tabulate(n, s);
    return true;
}

// One output element from the operands' integer values va = q_a - zp_a, vb = q_b - zp_b.
inline int32_t combine(const ArithState& s, int64_t va, int64_t vb) {
    switch (s.op) {
        case Op::kDiv:
            if (vb == 0) return va > 0 ? s.qmax : (va < 0 ? 0 : saturate(s.zp_y, s.qmax));  // +-inf, 0/0
            return requantize_out_fast(div_round(va << s.div_shift, vb), s.mult[0], s.shift[0], s.zp_y, s.qmax);
        case Op::kMin:
        case Op::kMax: {
            const int32_t ra = requantize_out_fast(va, s.mult[0], s.shift[0], s.zp_y, s.qmax);
            const int32_t rb = requantize_out_fast(vb, s.mult[1], s.shift[1], s.zp_y, s.qmax);
            return s.op == Op::kMin ? std::min(ra, rb) : std::max(ra, rb);
        }
        default:  // PRelu: a = x, b = slope
            if (va >= 0) return requantize_out_fast(va, s.mult[0], s.shift[0], s.zp_y, s.qmax);
            return requantize_out_fast(va * vb, s.mult[1], s.shift[1], s.zp_y, s.qmax);
    }
}

template <class TA, class TB, class TY>
void binary_rows(const ArithState& s, const TA* a, const TB* b, TY* y, const ExecContext& ctx) {
    broadcast_rows(s.plan, a, b, y, ctx, [&](TA qa, TB qb) {
        return static_cast<TY>(combine(s, static_cast<int64_t>(qa) - s.zp[0], static_cast<int64_t>(qb) - s.zp[1]));
    });
}

// The table of an 8-bit activation x with a one-element constant c (output of x's size, so in x's
// order): entry q is binary_rows on the codes q and c, one row of 256.
void tabulate(Node& n, ArithState& s) {
    if (s.op == Op::kWhere) return;
    const int v = code_table_operand(n);
    if (v >= 0) {
        const Tensor* c = n.in[1 - v];
        const uint8_t* codes = kAllCodes.q;
        ArithState row = s;  // the same arithmetic over one row: x's codes against c
        row.plan = BroadcastPlan();
        row.plan.inner = 256;
        row.plan.inner_stride = {v == 0 ? 1 : 0, v == 0 ? 0 : 1};
        row.plan.outer_strides.assign(2, {});
        s.table.resize(256);
        ExecContext one;
        with_int_type(c->dtype, [&](auto tc) {
            using TC = decltype(tc);
            if (v == 0) binary_rows(row, codes, c->in<TC>(), s.table.data(), one);
            else binary_rows(row, c->in<TC>(), codes, s.table.data(), one);
        });
        s.varying = v;
    }
}

template <class TA, class TB, class TY>
void where_rows(const ArithState& s, const uint8_t* c, const TA* a, const TB* b, TY* y, const ExecContext& ctx) {
    const BroadcastPlan& p = s.plan;
    parallel_for(ctx, p.outer, [&](int64_t row) {
        int64_t off[3];
        p.offsets(row, off);
        TY* py = y + row * p.inner;
        for (int64_t i = 0; i < p.inner; ++i) {
            const int32_t q = c[off[0] + i * p.inner_stride[0]]
                                  ? requantize_out_fast(static_cast<int64_t>(a[off[1] + i * p.inner_stride[1]]) - s.zp[1],
                                                   s.mult[0], s.shift[0], s.zp_y, s.qmax)
                                  : requantize_out_fast(static_cast<int64_t>(b[off[2] + i * p.inner_stride[2]]) - s.zp[2],
                                                   s.mult[1], s.shift[1], s.zp_y, s.qmax);
            py[i] = static_cast<TY>(q);
        }
    });
}


void run_arith(Node& n, const ExecContext& ctx) {
    const ArithState& s = n.state_as<ArithState>();
    if (s.varying >= 0) {
        apply_code_table(*n.in[s.varying], *n.out[0], s.table.data(), ctx);
        return;
    }
    const size_t first = s.op == Op::kWhere ? 1 : 0;
    with_int_type(n.in[first]->dtype, [&](auto ta) {
        with_int_type(n.in[first + 1]->dtype, [&](auto tb) {
            with_int_type(n.out[0]->dtype, [&](auto ty) {
                using TA = decltype(ta);
                using TB = decltype(tb);
                using TY = decltype(ty);
                const TA* a = n.in[first]->in<TA>();
                const TB* b = n.in[first + 1]->in<TB>();
                TY* y = n.out[0]->out<TY>();
                if (s.op == Op::kWhere) where_rows(s, n.in[0]->in<uint8_t>(), a, b, y, ctx);
                else binary_rows(s, a, b, y, ctx);
            });
        });
    });
}

// ---- Pow with a constant exponent (N33) ---------------------------------------------------------

enum class PowMode { kSquare, kIdentity, kSqrt };

struct PowState {
    ArrayView<int32_t> table;  // the output code of every input code (2^b entries)
};

bool prepare_pow(Node& n, std::string& err) {
    if (refused(n, err)) return false;
    if (!check_int_operand(n.input(0), err) || !check_int_output(n.output(0), err)) return false;
    const Tensor* x = n.in[0];
    if (x->is_const() || (x->dtype != QNNB_UINT8 && x->dtype != QNNB_UINT16) || x->numel() != n.out[0]->numel()) {
        err = "input must be an 8- or 16-bit activation of the output's size (a broadcasting exponent)";
        return false;
    }
    const std::string name = n.params.s("npu_pow");
    PowMode mode;
    if (name == "square") mode = PowMode::kSquare;
    else if (name == "identity") mode = PowMode::kIdentity;
    else if (name == "sqrt") mode = PowMode::kSqrt;
    else {
        err = "parameter npu_pow missing (convert the model for the npu again)";
        return false;
    }
    int32_t mult = 0, shift = 0;
    if (!int_params(n, "npu_mult", 1, &mult, err) || !int_params(n, "npu_shift", 1, &shift, err)) return false;
    const int32_t zp_x = zero_point(*x), zp_y = zero_point(*n.out[0]), qmax = qmax_of(*n.out[0]);
    // (N33) is a function of the input code alone: tabulated here, with the same integers.
    auto& s = n.make_state<PowState>();
    s.table = code_table(n, 0, x->encoding.bitwidth, [&](int64_t q) {
        const int64_t v = q - zp_x;
        int64_t acc;
        if (mode == PowMode::kSquare) acc = v * v;  // < 2^32
        else if (mode == PowMode::kIdentity) acc = v;
        else acc = v > 0 ? static_cast<int64_t>(isqrt64(static_cast<uint64_t>(v) << 32)) : 0;  // sqrt(v) in Q16
        return requantize_out(acc, mult, shift, zp_y, qmax);
    });
    return true;
}

void run_pow(Node& n, const ExecContext& ctx) {
    const PowState& s = n.state_as<PowState>();
    apply_code_table(*n.in[0], *n.out[0], s.table.data(), ctx);
}

const Kernel kKernels[] = {
    {"Div", prepare_arith, run_arith},   {"Min", prepare_arith, run_arith},
    {"Max", prepare_arith, run_arith},   {"Where", prepare_arith, run_arith},
    {"PRelu", prepare_arith, run_arith}, {"Pow", prepare_pow, run_pow},
};

}  // namespace

extern const KernelTable kNpuArithKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace npu
}  // namespace qnnb
