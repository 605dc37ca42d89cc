// Equal, Greater, GreaterOrEqual, Less, LessOrEqual of integer codes, with broadcasting: docs/npu.md
// (N35). Each operand's value is the float32 product the cpu simulation compares, s · (q − zp),
// computed exactly in integers (its scale's 24-bit mantissa times q − zp, rounded to 24 significant
// bits as float32 rounds), so the npu's bools equal the cpu's, ties included.
#include <algorithm>
#include <cstdint>

#include "../core/broadcast.h"
#include "../core/parallel.h"
#include "code_table.h"
#include "refusal.h"

namespace qnnb {
namespace npu {
namespace {

enum class Cmp { kEqual, kGreater, kGreaterEqual, kLess, kLessEqual };

constexpr int64_t kMantissaLimit = int64_t{1} << 24;  // a float32 scale's mantissa, (N35)
constexpr int32_t kMaxShift = 20;                        // past it the comparison no longer changes

struct CompareState {
    Cmp op = Cmp::kEqual;
    BroadcastPlan plan;
    int32_t zp[2] = {0, 0};
    int64_t mantissa[2] = {0, 0};
    int32_t shift[2] = {0, 0};
    // An activation with a one-element constant: the bool of every code of the activation.
    int varying = -1;
    ArrayView<int32_t> table;
};

// round(m · v) to 24 significant bits, halves to even: the float32 product (N35), in units of the
// scale's last mantissa bit. |m · v| < 2^40.
inline int64_t float32_product(int64_t m, int64_t v) {
    const int64_t p = m * v;
    const uint64_t a = static_cast<uint64_t>(p < 0 ? -p : p);
    if (a < static_cast<uint64_t>(kMantissaLimit)) return p;
    const int drop = (64 - __builtin_clzll(a)) - 24;
    const uint64_t half = uint64_t{1} << (drop - 1), rest = a & ((half << 1) - 1);
    uint64_t r = a >> drop;
    if (rest > half || (rest == half && (r & 1))) ++r;
    const int64_t rounded = static_cast<int64_t>(r << drop);
    return p < 0 ? -rounded : rounded;
}

inline bool compare(const CompareState& s, int64_t qa, int64_t qb) {
    const int64_t a = float32_product(s.mantissa[0], qa - s.zp[0]) * (int64_t{1} << s.shift[0]);  // < 2^60
    const int64_t b = float32_product(s.mantissa[1], qb - s.zp[1]) * (int64_t{1} << s.shift[1]);
    switch (s.op) {
        case Cmp::kEqual: return a == b;
        case Cmp::kGreater: return a > b;
        case Cmp::kGreaterEqual: return a >= b;
        case Cmp::kLess: return a < b;
        default: return a <= b;
    }
}

bool is_code_operand(const Tensor* t, std::string& err) {
    if (!check_int_operand(t, err)) return false;
    if (t->dtype == QNNB_INT32) {
        err = "tensor '" + t->name + "' must have 8 or 16 bits here";
        return false;
    }
    return true;
}

// The varying operand of an activation and a one-element constant covering the output, or -1.
int table_operand(const Node& n) {
    for (int v = 0; v < 2; ++v) {
        const Tensor *x = n.in[v], *c = n.in[1 - v];
        const bool codes = x->dtype == QNNB_UINT8 || x->dtype == QNNB_UINT16;
        if (codes && !x->is_const() && c->is_const() && c->numel() == 1 && n.out[0]->numel() == x->numel()) return v;
    }
    return -1;
}

bool prepare_compare(Node& n, std::string& err) {
    if (refused(n, err)) return false;
    if (n.in.size() != 2) {
        err = "expected 2 inputs";
        return false;
    }
    if (!is_code_operand(n.in[0], err) || !is_code_operand(n.in[1], err)) return false;
    const Tensor* y = n.output(0);
    if (!y || y->dtype != QNNB_BOOL) {
        err = "output must be bool";
        return false;
    }
    auto& s = n.make_state<CompareState>();
    s.op = n.op == "Equal" ? Cmp::kEqual : n.op == "Greater" ? Cmp::kGreater : n.op == "GreaterOrEqual" ? Cmp::kGreaterEqual
         : n.op == "Less" ? Cmp::kLess : Cmp::kLessEqual;
    std::vector<const Tensor*> ins(n.in.begin(), n.in.end());
    if (!plan_broadcast(ins, y->shape, s.plan, err)) return false;
    int32_t mantissa[2], shift[2];
    if (!int_params(n, "npu_scale_mantissa", 2, mantissa, err) || !int_params(n, "npu_scale_shift", 2, shift, err))
        return false;
    for (int k = 0; k < 2; ++k) {
        if (mantissa[k] < 0 || mantissa[k] >= kMantissaLimit || shift[k] < 0 || shift[k] > kMaxShift) {
            err = "npu_scale_mantissa or npu_scale_shift out of range";
            return false;
        }
        s.mantissa[k] = mantissa[k];
        s.shift[k] = shift[k];
        s.zp[k] = zero_point(*n.in[k]);
    }
    s.varying = table_operand(n);
    if (s.varying >= 0) {  // the threshold form: a bool per code, by the same comparison
        const Tensor& c = *n.in[1 - s.varying];
        int64_t qc = 0;
        with_int_type(c.dtype, [&](auto tc) { qc = c.in<decltype(tc)>()[0]; });
        const bool first = s.varying == 0;
        s.table = code_table(n, 0, n.in[s.varying]->encoding.bitwidth,
                             [&](int64_t q) { return first ? compare(s, q, qc) : compare(s, qc, q); });
    }
    return true;
}

void run_compare(Node& n, const ExecContext& ctx) {
    const CompareState& s = n.state_as<CompareState>();
    uint8_t* y = n.out[0]->out<uint8_t>();
    if (s.varying >= 0) {
        constexpr int64_t kChunk = 16384;
        const Tensor& x = *n.in[s.varying];
        const int32_t* table = s.table.data();
        const int64_t total = x.numel();
        const bool fast = total >= kFastLookupMin && fast_byte_lookup();
        parallel_for(ctx, (total + kChunk - 1) / kChunk, [&](int64_t c) {
            const int64_t begin = c * kChunk, len = std::min(total, begin + kChunk) - begin;
            if (x.dtype == QNNB_UINT8) lookup_bytes(x.in<uint8_t>() + begin, y + begin, table, len, fast);
            else lookup(x.in<uint16_t>() + begin, y + begin, table, len);
        });
        return;
    }
    with_int_type(n.in[0]->dtype, [&](auto ta) {
        with_int_type(n.in[1]->dtype, [&](auto tb) {
            using TA = decltype(ta);
            using TB = decltype(tb);
            broadcast_rows(s.plan, n.in[0]->in<TA>(), n.in[1]->in<TB>(), y, ctx,
                           [&](TA qa, TB qb) -> uint8_t { return compare(s, qa, qb) ? 1 : 0; });
        });
    });
}

const Kernel kKernels[] = {
    {"Equal", prepare_compare, run_compare},          {"Greater", prepare_compare, run_compare},
    {"GreaterOrEqual", prepare_compare, run_compare}, {"Less", prepare_compare, run_compare},
    {"LessOrEqual", prepare_compare, run_compare},
};

}  // namespace

extern const KernelTable kNpuCompareKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace npu
}  // namespace qnnb
