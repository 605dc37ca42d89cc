// Pooling on integer codes: docs/npu.md (N24) MaxPool / GlobalMaxPool (max of codes, then the
// output re-encoding (N20)), (N25) AveragePool / GlobalAveragePool (integer sum of q - zp_x,
// requantized by a multiplier that folds in 1 / count).
// Windows are 1D-3D with explicit pads, strides and dilations, handled as 3D with leading 1s. Max
// and integer sums are separable and exact in any order, so a plane reduces one axis at a time
// (width, then height, then depth), each pass a contiguous loop over the dims inside it.
#include <algorithm>
#include <vector>

#include "../core/parallel.h"
#include "../core/window.h"
#include "code_table.h"
#include "refusal.h"

namespace qnnb {
namespace npu {
namespace {

// One spatial axis: per output coordinate o (input index of tap t: o * stride - pad + t * dil) the
// taps [lo, hi) inside the input and (AveragePool) the count of taps the average divides by; per
// tap, the outputs [tap_lo, tap_hi) for which it lies inside the input.
struct Axis {
    int64_t in = 1, out = 1, k = 1, stride = 1, pad = 0, dil = 1;
    std::vector<int64_t> lo{0}, hi{1}, count{1}, tap_lo{0}, tap_hi{1};
};

struct PoolState {
    int64_t planes = 0;
    Axis axis[3];                       // depth, height, width
    int64_t volume = 1;                 // kernel taps
    int32_t zp_x = 0, zp_y = 0, qmax = 0;
    std::vector<int32_t> mult, shift;   // MaxPool: [0]; AveragePool: [c - 1] for count c
    ArrayView<int32_t> table;           // MaxPool with a re-encoding: code -> output code (N20)
    // AveragePool, per output position of a plane: (taps inside the input) x zp_x, and c - 1.
    std::vector<int64_t> correction;
    std::vector<int32_t> mult_index;
    // 8-bit inputs: |acc| < 2^31, so (N2) is exact in int64; per position mult, rounding term and
    // shift t = 31 + shift (all in [1, 62]), for a branch-free loop the compiler vectorises.
    std::vector<int64_t> pos_mult, pos_round, pos_shift;
};

bool prepare_window(Node& n, PoolState& s, std::string& err) {
    const Tensor* x = n.in[0];
    const Tensor* y = n.out[0];
    Window w;
    if (!read_pool_window(n, w, s.planes, err)) return false;
    const bool include_pad = n.params.i("count_include_pad", 0) != 0;
    for (int d = 3 - w.spatial; d < 3; ++d) {
        Axis& a = s.axis[d];
        a.in = w.in[d];
        a.out = w.out[d];
        a.k = w.k[d];
        a.stride = w.stride[d];
        a.pad = w.pad_lo[d];
        a.dil = w.dil[d];
        a.lo.clear(), a.hi.clear(), a.count.clear();
        a.tap_lo.assign(static_cast<size_t>(a.k), 0);
        a.tap_hi.assign(static_cast<size_t>(a.k), 0);
        s.volume *= a.k;
        for (int64_t o = 0; o < a.out; ++o) {
            const int64_t first = o * a.stride - a.pad;
            int64_t lo = 0, hi = 0;
            for (int64_t t = 0; t < a.k; ++t) {
                const int64_t idx = first + t * a.dil;
                if (idx >= 0 && idx < a.in) {
                    if (hi == 0) lo = t;
                    hi = t + 1;
                    if (a.tap_hi[t] == 0) a.tap_lo[t] = o;
                    a.tap_hi[t] = o + 1;
                }
            }
            a.lo.push_back(lo);
            a.hi.push_back(std::max(lo, hi));
            a.count.push_back(window_count(w, d, o, include_pad));  // AveragePool's divisor
        }
    }
    s.zp_x = zero_point(*x);
    s.zp_y = zero_point(*y);
    s.qmax = qmax_of(*y);
    return true;
}

bool read_mults(const Node& n, PoolState& s, size_t count, std::string& err) {
    s.mult.resize(count);
    s.shift.resize(count);
    return int_params(n, "npu_mult", count, s.mult.data(), err) && int_params(n, "npu_shift", count, s.shift.data(), err);
}

bool check_io(const Node& n, std::string& err) {
    if (!check_int_operand(n.input(0), err) || !check_int_output(n.output(0), err)) return false;
    if (n.in[0]->is_const() || (n.in[0]->dtype != QNNB_UINT8 && n.in[0]->dtype != QNNB_UINT16)) {
        err = "input must be an 8- or 16-bit activation";
        return false;
    }
    return true;
}

// (N20) table for the output re-encoding of a max/min of codes; empty when the encodings agree.
ArrayView<int32_t> output_recode_table(Node& n, int32_t mult, int32_t shift) {
    const Tensor &x = *n.in[0], &y = *n.out[0];
    return same_encoding(x, y) ? ArrayView<int32_t>{} : recode_table(n, 0, x, y, mult, shift);
}

bool prepare_max_pool(Node& n, std::string& err) {
    if (!check_io(n, err)) return false;
    auto& s = n.make_state<PoolState>();
    if (!prepare_window(n, s, err) || !read_mults(n, s, 1, err)) return false;
    s.table = output_recode_table(n, s.mult[0], s.shift[0]);
    return true;
}

bool prepare_average_pool(Node& n, std::string& err) {
    if (!check_io(n, err)) return false;
    auto& s = n.make_state<PoolState>();
    if (!prepare_window(n, s, err) || !read_mults(n, s, static_cast<size_t>(s.volume), err)) return false;
    const Axis &ad = s.axis[0], &ah = s.axis[1], &aw = s.axis[2];
    for (int64_t od = 0; od < ad.out; ++od)
        for (int64_t oh = 0; oh < ah.out; ++oh)
            for (int64_t ow = 0; ow < aw.out; ++ow) {
                const int64_t taps = (ad.hi[od] - ad.lo[od]) * (ah.hi[oh] - ah.lo[oh]) * (aw.hi[ow] - aw.lo[ow]);
                s.correction.push_back(taps * s.zp_x);
                s.mult_index.push_back(static_cast<int32_t>(ad.count[od] * ah.count[oh] * aw.count[ow] - 1));
            }
    bool narrow = n.in[0]->dtype == QNNB_UINT8 && s.volume < (int64_t{1} << 23);
    for (size_t c = 0; c < s.mult.size(); ++c) narrow = narrow && s.shift[c] >= -30 && s.shift[c] <= 31;
    if (narrow)
        for (int32_t c : s.mult_index) {
            const int64_t t = c < 0 ? 1 : 31 + s.shift[c];
            s.pos_mult.push_back(c < 0 ? 0 : s.mult[c]);
            s.pos_round.push_back(c < 0 ? 0 : int64_t{1} << (t - 1));
            s.pos_shift.push_back(t);
        }
    return true;
}

// One axis of a plane: [outer, a.in, inner] -> [outer, a.out, inner], each output the max (or sum)
// over its taps inside the input (a max over no tap is -1). Tap by tap, so the inner loops run over
// consecutive outputs with a fixed input stride.
template <bool kMax, class TI, class TO>
void reduce_axis(const Axis& a, const TI* __restrict in, TO* __restrict out, int64_t outer, int64_t inner) {
    const int64_t n_in = a.in, n_out = a.out, st = a.stride;
    for (int64_t o = 0; o < outer; ++o) {
        TO* dst = out + o * n_out * inner;
        std::fill(dst, dst + n_out * inner, kMax ? TO(-1) : TO(0));
        for (int64_t t = 0; t < a.k; ++t) {
            const int64_t lo = a.tap_lo[t], hi = a.tap_hi[t];
            const int64_t base = o * n_in - a.pad + t * a.dil;  // input row of output ko: base + ko * st
            if (inner == 1) {
                if (kMax) {
                    for (int64_t ko = lo; ko < hi; ++ko) dst[ko] = in[base + ko * st] > dst[ko] ? TO(in[base + ko * st]) : dst[ko];
                } else {
                    for (int64_t ko = lo; ko < hi; ++ko) dst[ko] += TO(in[base + ko * st]);
                }
                continue;
            }
            for (int64_t ko = lo; ko < hi; ++ko) {
                const TI* sp = in + (base + ko * st) * inner;
                TO* dp = dst + ko * inner;
                if (kMax) {
                    for (int64_t i = 0; i < inner; ++i) dp[i] = sp[i] > dp[i] ? TO(sp[i]) : dp[i];
                } else {
                    for (int64_t i = 0; i < inner; ++i) dp[i] += TO(sp[i]);
                }
            }
        }
    }
}

// A whole plane: width, height, depth passes into `buf` (two scratch areas), result in `res`.
template <bool kMax, class TX, class Acc>
const Acc* reduce_plane(const PoolState& s, const TX* x, std::vector<Acc>& buf) {
    const Axis &ad = s.axis[0], &ah = s.axis[1], &aw = s.axis[2];
    const int64_t size1 = ad.in * ah.in * aw.out, size2 = ad.in * ah.out * aw.out, size3 = ad.out * ah.out * aw.out;
    buf.resize(static_cast<size_t>(size1 + std::max(size2, size3)));
    Acc* b1 = buf.data();
    Acc* b2 = b1 + size1;
    reduce_axis<kMax>(aw, x, b1, ad.in * ah.in, 1);
    reduce_axis<kMax>(ah, static_cast<const Acc*>(b1), b2, ad.in, aw.out);
    if (ad.in == 1 && ad.out == 1 && ad.k == 1 && ad.pad == 0) return b2;  // 1D/2D: no depth pass
    reduce_axis<kMax>(ad, static_cast<const Acc*>(b2), b1, 1, ah.out * aw.out);
    return b1;
}

// Small windows: each output the max over its taps inside the input, read in place, with no
// scratch planes (a max is the same in any order, so the bytes equal the separable passes').
constexpr int64_t kDirectTaps = 16;

template <class TX, class TY>
void max_pool_direct(const PoolState& s, const TX* x, TY* y, const ExecContext& ctx) {
    const Axis &ad = s.axis[0], &ah = s.axis[1], &aw = s.axis[2];
    const int64_t in_plane = ad.in * ah.in * aw.in, out_plane = ad.out * ah.out * aw.out;
    const int32_t* table = s.table.empty() ? nullptr : s.table.data();
    parallel_for(ctx, s.planes, [&](int64_t p) {
        const TX* xp = x + p * in_plane;
        TY* yp = y + p * out_plane;
        for (int64_t od = 0; od < ad.out; ++od)
            for (int64_t oh = 0; oh < ah.out; ++oh)
                for (int64_t ow = 0; ow < aw.out; ++ow) {
                    int32_t m = -1;  // no tap inside the input: code 0 below, as in max_pool_typed
                    for (int64_t td = ad.lo[od]; td < ad.hi[od]; ++td) {
                        const int64_t id = od * ad.stride - ad.pad + td * ad.dil;
                        for (int64_t th = ah.lo[oh]; th < ah.hi[oh]; ++th) {
                            const TX* row = xp + (id * ah.in + oh * ah.stride - ah.pad + th * ah.dil) * aw.in;
                            for (int64_t tw = aw.lo[ow]; tw < aw.hi[ow]; ++tw)
                                m = std::max<int32_t>(m, row[ow * aw.stride - aw.pad + tw * aw.dil]);
                        }
                    }
                    *yp++ = static_cast<TY>(m < 0 ? 0 : (table ? table[m] : m));
                }
    });
}

template <class TX, class TY>
void max_pool_typed(const PoolState& s, const TX* x, TY* y, const ExecContext& ctx) {
    if (s.volume <= kDirectTaps) return max_pool_direct(s, x, y, ctx);
    const int64_t in_plane = s.axis[0].in * s.axis[1].in * s.axis[2].in;
    const int64_t out_plane = s.axis[0].out * s.axis[1].out * s.axis[2].out;
    const int32_t* table = s.table.empty() ? nullptr : s.table.data();
    parallel_for(ctx, s.planes, [&](int64_t p) {
        std::vector<int32_t> buf;
        const int32_t* m = reduce_plane<true>(s, x + p * in_plane, buf);
        TY* yp = y + p * out_plane;
        // no tap inside the input: code 0 (the lowest value, as -inf saturates)
        for (int64_t i = 0; i < out_plane; ++i) yp[i] = static_cast<TY>(m[i] < 0 ? 0 : (table ? table[m[i]] : m[i]));
    });
}

// Acc: int32 for 8-bit inputs (a sum of at most 2^23 codes of 255 < 2^31, checked), else int64.
template <class Acc, class TX, class TY>
void average_pool_typed(const PoolState& s, const TX* x, TY* y, const ExecContext& ctx) {
    const int64_t in_plane = s.axis[0].in * s.axis[1].in * s.axis[2].in;
    const int64_t out_plane = s.axis[0].out * s.axis[1].out * s.axis[2].out;
    const int32_t zp_y = s.zp_y, qmax = s.qmax;
    const int32_t* mult = s.mult.data();
    const int32_t* shift = s.shift.data();
    const int64_t* correction = s.correction.data();
    const int32_t* index = s.mult_index.data();
    parallel_for(ctx, s.planes, [&](int64_t p) {
        std::vector<Acc> buf;
        const Acc* sum = reduce_plane<false>(s, x + p * in_plane, buf);
        TY* __restrict yp = y + p * out_plane;
        if (!s.pos_mult.empty()) {
            const int64_t *pm = s.pos_mult.data(), *pr = s.pos_round.data(), *pt = s.pos_shift.data();
            for (int64_t i = 0; i < out_plane; ++i) {
                const int64_t acc = static_cast<int64_t>(sum[i]) - correction[i];  // |acc| < 2^31
                const int64_t v = ((acc * pm[i] + pr[i]) >> pt[i]) + zp_y;           // (N2), (N3)
                yp[i] = static_cast<TY>(v < 0 ? 0 : (v > qmax ? qmax : v));
            }
            return;
        }
        for (int64_t i = 0; i < out_plane; ++i) {
            const int64_t acc = static_cast<int64_t>(sum[i]) - correction[i];  // sum of (q - zp_x) inside
            const int32_t c = index[i];  // count - 1; -1: no count, the output is 0
            yp[i] = static_cast<TY>(c < 0 ? saturate(zp_y, qmax) : requantize_out_fast(acc, mult[c], shift[c], zp_y, qmax));
        }
    });
}

template <class Body>
void with_io_types(Node& n, Body body) {
    with_int_type(n.in[0]->dtype, [&](auto tx) {
        with_int_type(n.out[0]->dtype, [&](auto ty) { body(tx, ty); });
    });
}

void run_max_pool(Node& n, const ExecContext& ctx) {
    const PoolState& s = n.state_as<PoolState>();
    with_io_types(n, [&](auto tx, auto ty) {
        using TX = decltype(tx);
        using TY = decltype(ty);
        max_pool_typed<TX, TY>(s, n.in[0]->in<TX>(), n.out[0]->out<TY>(), ctx);
    });
}

void run_average_pool(Node& n, const ExecContext& ctx) {
    const PoolState& s = n.state_as<PoolState>();
    const bool narrow = n.in[0]->dtype == QNNB_UINT8 && s.volume < (int64_t{1} << 23);
    with_io_types(n, [&](auto tx, auto ty) {
        using TX = decltype(tx);
        using TY = decltype(ty);
        if (narrow) average_pool_typed<int32_t, TX, TY>(s, n.in[0]->in<TX>(), n.out[0]->out<TY>(), ctx);
        else average_pool_typed<int64_t, TX, TY>(s, n.in[0]->in<TX>(), n.out[0]->out<TY>(), ctx);
    });
}

// ---- global pools: one output per plane ---------------------------------------------------------

struct GlobalState {
    int64_t planes = 0, size = 0;
    int32_t zp_x = 0, zp_y = 0, qmax = 0, mult = 0, shift = 0;
    ArrayView<int32_t> table;
};

bool prepare_global(Node& n, std::string& err) {
    if (!check_io(n, err)) return false;
    const Tensor* x = n.in[0];
    auto& s = n.make_state<GlobalState>();
    if (!read_global_planes(n, s.planes, s.size, err)) return false;
    s.zp_x = zero_point(*x);
    s.zp_y = zero_point(*n.out[0]);
    s.qmax = qmax_of(*n.out[0]);
    if (!int_params(n, "npu_mult", 1, &s.mult, err) || !int_params(n, "npu_shift", 1, &s.shift, err)) return false;
    if (n.op == "GlobalMaxPool") s.table = output_recode_table(n, s.mult, s.shift);
    return true;
}

void run_global_max(Node& n, const ExecContext& ctx) {
    const GlobalState& s = n.state_as<GlobalState>();
    with_io_types(n, [&](auto tx, auto ty) {
        using TX = decltype(tx);
        using TY = decltype(ty);
        const TX* x = n.in[0]->in<TX>();
        TY* y = n.out[0]->out<TY>();
        parallel_for(ctx, s.planes, [&](int64_t p) {
            const TX* xp = x + p * s.size;
            TX m = 0;
            for (int64_t i = 0; i < s.size; ++i) m = xp[i] > m ? xp[i] : m;
            y[p] = static_cast<TY>(s.table.empty() ? m : s.table[m]);
        });
    });
}

void run_global_average(Node& n, const ExecContext& ctx) {
    const GlobalState& s = n.state_as<GlobalState>();
    with_io_types(n, [&](auto tx, auto ty) {
        using TX = decltype(tx);
        using TY = decltype(ty);
        const TX* x = n.in[0]->in<TX>();
        TY* y = n.out[0]->out<TY>();
        parallel_for(ctx, s.planes, [&](int64_t p) {
            const TX* xp = x + p * s.size;
            int64_t acc = 0;  // size x 65535: int64
            for (int64_t i = 0; i < s.size; ++i) acc += xp[i];
            acc -= s.size * s.zp_x;
            y[p] = static_cast<TY>(requantize_out_fast(acc, s.mult, s.shift, s.zp_y, s.qmax));
        });
    });
}

const Kernel kKernels[] = {
    {"LpPool", refuse, run_nothing},
    {"MaxPool", prepare_max_pool, run_max_pool},
    {"AveragePool", prepare_average_pool, run_average_pool},
    {"GlobalMaxPool", prepare_global, run_global_max},
    {"GlobalAveragePool", prepare_global, run_global_average},
};

}  // namespace

extern const KernelTable kNpuPoolKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace npu
}  // namespace qnnb
