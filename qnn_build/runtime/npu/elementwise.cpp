// Integer Add, Sub, Mul with broadcasting: docs/npu.md (N4), (N5).
#include <algorithm>
#include <vector>

#include "../core/broadcast.h"
#include "../core/parallel.h"
#include "misc.h"

namespace qnnb {
namespace npu {
namespace {

struct BinaryState {
    BroadcastPlan plan;
    int32_t zp_a = 0, zp_b = 0, zp_y = 0, qmax = 0;
    int32_t left_shift = 0;
    int32_t mult[3] = {0, 0, 0}, shift[3] = {0, 0, 0};  // a, b, y (Mul uses [0] only)
    // An 8-bit activation with a one-element constant (x + 1, x · 0.5): y is a function of x's
    // code, tabulated at prepare by the same row loop. `varying`: x's input index; -1 otherwise.
    int varying = -1;
    std::vector<int32_t> table;
};

using misc::requantize_fast;

template <int Op>
void tabulate(Node& n, BinaryState& s);

template <int Op>
bool prepare_binary(Node& n, std::string& err) {
    if (!check_int_operand(n.input(0), err) || !check_int_operand(n.input(1), err) || !check_int_output(n.output(0), err))
        return false;
    auto& s = n.make_state<BinaryState>();
    if (!plan_broadcast({n.in[0], n.in[1]}, n.out[0]->shape, s.plan, err)) return false;
    s.zp_a = zero_point(*n.in[0]);
    s.zp_b = zero_point(*n.in[1]);
    s.zp_y = zero_point(*n.out[0]);
    s.qmax = qmax_of(*n.out[0]);
    const size_t k = n.op == "Mul" ? 1 : 3;
    if (!int_params(n, "npu_mult", k, s.mult, err) || !int_params(n, "npu_shift", k, s.shift, err)) return false;
    if (n.op != "Mul") s.left_shift = static_cast<int32_t>(n.params.i("npu_left_shift", 20));
    tabulate<Op>(n, s);
    return true;
}

// One output row: y = combine(a - zp_a, b - zp_b), requantized. `Op` is 0 add, 1 sub, 2 mul.
template <int Op, class TA, class TB, class TY>
void binary_row(const BinaryState& s, const TA* a, int64_t sa, const TB* b, int64_t sb, TY* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const int64_t va = static_cast<int64_t>(a[i * sa]) - s.zp_a;
        const int64_t vb = static_cast<int64_t>(b[i * sb]) - s.zp_b;
        int64_t acc;
        if (Op == 2) {
            acc = requantize_fast(va * vb, s.mult[0], s.shift[0]);                       // (N5), |va*vb| < 2^32
        } else {
            const int64_t ra = requantize_fast(va << s.left_shift, s.mult[0], s.shift[0]);  // (N4)
            const int64_t rb = requantize_fast(vb << s.left_shift, s.mult[1], s.shift[1]);
            acc = requantize_fast(Op == 0 ? ra + rb : ra - rb, s.mult[2], s.shift[2]);
        }
        y[i] = static_cast<TY>(saturate(acc + s.zp_y, s.qmax));
    }
}

// The table of an 8-bit activation x with a one-element constant c (output of x's size, so in x's
// order): entry q is binary_row on the codes q and c.
template <int Op>
void tabulate(Node& n, BinaryState& s) {
    for (int v = 0; v < 2; ++v) {
        const Tensor *x = n.in[v], *c = n.in[1 - v];
        if (x->is_const() || x->dtype != QNNB_UINT8 || !c->is_const() || c->numel() != 1 ||
            n.out[0]->numel() != x->numel())
            continue;
        uint8_t codes[256];
        for (int q = 0; q < 256; ++q) codes[q] = static_cast<uint8_t>(q);
        s.table.resize(256);
        with_int_type(c->dtype, [&](auto tc) {
            using TC = decltype(tc);
            const TC* cp = c->in<TC>();
            if (v == 0) binary_row<Op>(s, codes, 1, cp, 0, s.table.data(), 256);
            else binary_row<Op>(s, cp, 0, codes, 1, s.table.data(), 256);
        });
        s.varying = v;
        return;
    }
}

constexpr int64_t kChunk = 16384;

template <int Op>
void run_binary(Node& n, const ExecContext& ctx) {
    const BinaryState& s = n.state_as<BinaryState>();
    if (s.varying >= 0) {
        const uint8_t* x = n.in[s.varying]->in<uint8_t>();
        const int64_t total = n.out[0]->numel();
        const int32_t* table = s.table.data();
        with_int_type(n.out[0]->dtype, [&](auto ty) {
            using TY = decltype(ty);
            TY* y = n.out[0]->out<TY>();
            parallel_for(ctx, (total + kChunk - 1) / kChunk, [&](int64_t c) {
                const int64_t end = std::min(total, (c + 1) * kChunk);
                for (int64_t i = c * kChunk; i < end; ++i) y[i] = static_cast<TY>(table[x[i]]);
            });
        });
        return;
    }
    with_int_type(n.in[0]->dtype, [&](auto ta) {
        with_int_type(n.in[1]->dtype, [&](auto tb) {
            with_int_type(n.out[0]->dtype, [&](auto ty) {
                using TA = decltype(ta);
                using TB = decltype(tb);
                using TY = decltype(ty);
                const TA* a = n.in[0]->in<TA>();
                const TB* b = n.in[1]->in<TB>();
                TY* y = n.out[0]->out<TY>();
                parallel_for(ctx, s.plan.outer, [&](int64_t row) {
                    int64_t off[2];
                    s.plan.offsets(row, off);
                    binary_row<Op>(s, a + off[0], s.plan.inner_stride[0], b + off[1], s.plan.inner_stride[1],
                                   y + row * s.plan.inner, s.plan.inner);
                });
            });
        });
    });
}

const Kernel kKernels[] = {
    {"Add", prepare_binary<0>, run_binary<0>},
    {"Sub", prepare_binary<1>, run_binary<1>},
    {"Mul", prepare_binary<2>, run_binary<2>},
};

}  // namespace

extern const KernelTable kNpuElementwiseKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace npu
}  // namespace qnnb
