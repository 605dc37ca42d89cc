// Normalisations on integer codes: docs/npu.md (N27) Softmax, (N28) LogSoftmax (exp of the code
// difference to the row's max by a table, the sum in int64, a rounded integer reciprocal or an
// integer log2), (N29) LayerNormalization / InstanceNormalization (integer mean with 8 fraction
// bits, integer variance, an exact integer reciprocal square root of the normalised variance).
#include <algorithm>
#include <type_traits>
#include <vector>

#include "../core/isa.h"
#include "../core/parallel.h"
#include "int_math.h"
#include "npu.h"
#include "refusal.h"

#if QNNB_HAS_AVX512_PATHS
#include <immintrin.h>
#endif

namespace qnnb {
namespace npu {
namespace {

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
    int64_t p = 1;
    for (size_t i = begin; i < end; ++i) p *= dims[i];
    return p;
}

// Shift right by s rounding half up (s > 0), or left by -s.
inline __int128 round_shift(__int128 v, int s) {
    if (s <= 0) return v << -s;
    return (v + (static_cast<__int128>(1) << (s - 1))) >> s;
}

inline int bit_length(unsigned __int128 v) {
    int b = 0;
    while (v) {
        v >>= 1;
        ++b;
    }
    return b;
}

// (N28): log2(s) in Q(frac) for s >= 1: the integer part from the bit length; the fraction one bit
// per step by squaring the mantissa (Q30 in [1, 2), truncated), exactly as the golden model does.
inline int64_t log2_fixed(int64_t s, int frac) {
    const int b = bit_length(static_cast<unsigned __int128>(s));
    uint64_t x = b > 31 ? static_cast<uint64_t>(s) >> (b - 31) : static_cast<uint64_t>(s) << (31 - b);
    int64_t f = 0;
    for (int i = 0; i < frac; ++i) {
        x = (x * x) >> 30;  // x < 2^31: x^2 < 2^62
        f <<= 1;
        if (x >= (uint64_t{1} << 31)) {
            f |= 1;
            x >>= 1;
        }
    }
    return (static_cast<int64_t>(b - 1) << frac) + f;
}

// ---- Softmax / LogSoftmax over [outer, n, inner] ------------------------------------------------

constexpr int kKnotShift = 6;  // (N27): 16-bit inputs tabulate exp every 64 code differences

struct SoftmaxState {
    int64_t outer = 1, n = 1, inner = 1;
    bool exact = true;             // 8-bit input: one table entry per code difference
    bool falling = false;          // the table never rises with d (as (N27) builds it)
    std::vector<int32_t> table;    // E[d] (8-bit) or the knots of E (16-bit), Q(exp_bits)
    int32_t exp_bits = 23, recip_bits = 62, log_bits = 20;
    int32_t mult[2] = {0, 0}, shift[2] = {0, 0};
    int32_t zp_y = 0, qmax = 0;
};

bool prepare_softmax(Node& n, std::string& err) {
    if (!check_int_operand(n.input(0), err) || !check_int_output(n.output(0), err)) return false;
    const Tensor* x = n.in[0];
    if (x->is_const() || (x->dtype != QNNB_UINT8 && x->dtype != QNNB_UINT16)) {
        err = "input must be an 8- or 16-bit activation";
        return false;
    }
    const std::vector<int64_t>& shape = x->shape;
    const int64_t axis = n.params.i("axis", x->rank() - 1);
    if (x->rank() == 0 || axis < 0 || axis >= x->rank()) {
        err = "axis out of range";
        return false;
    }
    auto& s = n.make_state<SoftmaxState>();
    const size_t a = static_cast<size_t>(axis);
    s.outer = product(shape, 0, a);
    if (n.params.i("coerce_2d", 0)) {
        s.n = product(shape, a, shape.size());
    } else {
        s.n = shape[a];
        s.inner = product(shape, a + 1, shape.size());
    }
    s.exact = x->dtype == QNNB_UINT8;
    const std::vector<int64_t> t = n.params.ints("npu_exp_lut");
    if (t.size() != (s.exact ? 256u : 65536u / 64 + 1)) {
        err = "exp table missing or of the wrong size (convert the model for the npu again)";
        return false;
    }
    s.table.assign(t.begin(), t.end());
    s.exp_bits = static_cast<int32_t>(n.params.i("npu_exp_bits", 23));
    s.recip_bits = static_cast<int32_t>(n.params.i("npu_recip_bits", 62));
    s.log_bits = static_cast<int32_t>(n.params.i("npu_log_bits", 20));
    const size_t k = n.op == "LogSoftmax" ? 2 : 1;
    if (!int_params(n, "npu_mult", k, s.mult, err) || !int_params(n, "npu_shift", k, s.shift, err)) return false;
    if (s.table.empty() || s.table[0] <= 0 || s.exp_bits > 30 || s.recip_bits > 62) {
        err = "bad exp table or reciprocal precision";
        return false;
    }
    s.zp_y = zero_point(*n.out[0]);
    s.qmax = qmax_of(*n.out[0]);
    s.falling = std::is_sorted(s.table.rbegin(), s.table.rend()) && s.mult[0] >= 0;
    return true;
}

// E(d) for a code difference d >= 0: the table, or (16-bit) its knots interpolated as (N7).
inline int64_t exp_of(const SoftmaxState& s, int32_t d) {
    if (s.exact) return s.table[static_cast<size_t>(d)];
    const int32_t k = d >> kKnotShift, r = d & ((1 << kKnotShift) - 1);
    const int64_t lo = s.table[static_cast<size_t>(k)], hi = s.table[static_cast<size_t>(k) + 1];
    return lo + (((hi - lo) * r + 32) >> kKnotShift);
}

// The largest and the smallest code of a row (a contiguous row in a loop the compiler vectorises).
template <class TX>
void row_range(const TX* __restrict x, int64_t n, int64_t step, int32_t& hi, int32_t& lo) {
    TX h = 0, l = static_cast<TX>(~TX{0});
    if (step == 1) {
        for (int64_t i = 0; i < n; ++i) {
            h = std::max(h, x[i]);
            l = std::min(l, x[i]);
        }
    } else {
        for (int64_t i = 0; i < n; ++i) {
            h = std::max(h, x[i * step]);
            l = std::min(l, x[i * step]);
        }
    }
    hi = h;
    lo = l;
}

// One softmax row of n codes at stride `step`. The output is a function of d = m - q alone: an
// 8-bit row with fewer distinct d (m - min + 1) than codes computes it once per d (the same
// integers) and looks it up. Softmax's output does not increase with d (E falls, the rest is
// monotonic) and E ≥ 0 gives at least requantize(0) + zp_y: once d reaches that floor, every
// larger d has it too.
template <bool kLog, class TX, class TY>
void softmax_row(const SoftmaxState& s, const TX* __restrict x, TY* __restrict y, int64_t n, int64_t step) {
    int32_t m = 0, lo = 0;
    row_range(x, n, step, m, lo);
    int64_t sum = 0;  // n x 2^23: int64
    if (s.exact) {
        const int32_t* e = s.table.data() + m;  // E(m - q) = e[-q]
        for (int64_t i = 0; i < n; ++i) sum += e[-static_cast<int32_t>(x[i * step])];
    } else {
        for (int64_t i = 0; i < n; ++i) sum += exp_of(s, m - x[i * step]);
    }
    const int32_t zp_y = s.zp_y, qmax = s.qmax;
    int64_t inv = 0, log_sum = 0;
    if (!kLog) {
        // (N27): round(2^62 / S); e <= S, so e x inv <= 2^62 + S / 2 < 2^63.
        inv = ((int64_t{1} << s.recip_bits) + sum / 2) / sum;
    } else {
        // (N28): z = -(d in Q20 log2 units) - (log2 S - exp_bits), all in Q20 log2 units.
        log_sum = log2_fixed(sum, s.log_bits) - (static_cast<int64_t>(s.exp_bits) << s.log_bits);
    }
    auto out_of = [&](int32_t d) -> TY {
        if (!kLog) return static_cast<TY>(requantize_out(exp_of(s, d) * inv, s.mult[0], s.shift[0], zp_y, qmax));
        const int64_t z = -requantize(d, s.mult[0], s.shift[0]) - log_sum;
        return static_cast<TY>(requantize_out(z, s.mult[1], s.shift[1], zp_y, qmax));
    };
    if (s.exact && m - lo + 1 < n) {
        TY table[256];
        const TY floor = kLog ? TY{0} : static_cast<TY>(saturate(zp_y, qmax));
        int32_t d = 0;
        for (; d <= m - lo; ++d) {
            table[d] = out_of(d);
            if (!kLog && s.falling && table[d] == floor) break;
        }
        for (; d <= m - lo; ++d) table[d] = floor;
        const TY* t = table + m;  // out(m - q) = t[-q]
        for (int64_t i = 0; i < n; ++i) y[i * step] = t[-static_cast<int32_t>(x[i * step])];
        return;
    }
    for (int64_t i = 0; i < n; ++i) y[i * step] = out_of(m - x[i * step]);
}

template <bool kLog>
void run_softmax(Node& n, const ExecContext& ctx) {
    const SoftmaxState& s = n.state_as<SoftmaxState>();
    if (s.n == 0) return;
    with_int_type(n.in[0]->dtype, [&](auto tx) {
        with_int_type(n.out[0]->dtype, [&](auto ty) {
            using TX = decltype(tx);
            using TY = decltype(ty);
            const TX* x = n.in[0]->in<TX>();
            TY* y = n.out[0]->out<TY>();
            parallel_for(ctx, s.outer * s.inner, [&](int64_t r) {
                const int64_t o = r / s.inner, j = r % s.inner, off = o * s.n * s.inner + j;
                softmax_row<kLog>(s, x + off, y + off, s.n, s.inner);
            });
        });
    });
}

// ---- LayerNormalization / InstanceNormalization -------------------------------------------------

constexpr int kRsqrtNormBits = 45;  // r_m = isqrt(2^90 / m), m in [2^28, 2^30): r_m = 2^45 / sqrt(m)

struct NormState {
    int64_t rows = 0, cols = 0;       // rows normalised independently, `cols` elements each
    int64_t channels = 0;             // InstanceNorm: row r is channel r % channels
    bool instance = false;
    int32_t zp_x = 0, zp_y = 0, qmax = 0, zp_g = 0, mult = 0, shift = 0;
    int32_t mean_bits = 8, rsqrt_bits = 32;
    int64_t eps = 1;
    const Tensor* gamma = nullptr;
    std::vector<int32_t> g;           // gamma - zp_g, per element (LayerNorm) or per channel
    std::vector<int64_t> bias;        // (N29) B, in the normalised product's units
    // Branch-free int64 path (same integers): |d g| < 2^31 for every element, the output
    // requantization's t = 31 + shift in [1, 62], and any accumulator beyond +-(2^31 - 1)
    // saturates the output, so clamping it there changes nothing.
    bool fast = false;
    bool avx512 = false;  // the fast loop's AVX-512 form (core/isa.h), chosen at prepare
};

// The fast loop of norm_row below on 8-bit codes, 8 elements per vector, the same int64 operations in
// the same order; returns how many elements it did (whole vectors), the caller does the rest.
#if QNNB_HAS_AVX512_PATHS
QNNB_AVX512_BEGIN
template <class TY>
int64_t norm_fast_avx512(const uint8_t* x, TY* y, const int32_t* g, const int64_t* b, int64_t n, int64_t zp_x, int k,
                         int64_t mean, int64_t r, int sh, int ty, int64_t mult, int64_t zp_y, int64_t qmax) {
    const __m512i vzp = _mm512_set1_epi64(zp_x), vmean = _mm512_set1_epi64(mean), vr = _mm512_set1_epi64(r);
    const __m512i round_u = _mm512_set1_epi64(int64_t{1} << (sh - 1)), vmult = _mm512_set1_epi64(mult);
    const __m512i round_y = _mm512_set1_epi64(int64_t{1} << (ty - 1)), vzy = _mm512_set1_epi64(zp_y);
    const __m512i hi = _mm512_set1_epi64((int64_t{1} << 31) - 1), lo = _mm512_set1_epi64(-((int64_t{1} << 31) - 1));
    const __m512i vq = _mm512_set1_epi64(qmax), zero = _mm512_setzero_si512();
    const __m128i kk = _mm_cvtsi32_si128(k), shu = _mm_cvtsi32_si128(sh), shy = _mm_cvtsi32_si128(ty);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m512i xv = _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i)));
        const __m512i d = _mm512_sub_epi64(_mm512_sll_epi64(_mm512_sub_epi64(xv, vzp), kk), vmean);
        const __m512i gv = _mm512_cvtepi32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + i)));
        const __m512i dgr = _mm512_mullo_epi64(_mm512_mullo_epi64(d, gv), vr);
        const __m512i u = _mm512_sra_epi64(_mm512_add_epi64(dgr, round_u), shu);
        __m512i acc = _mm512_add_epi64(u, _mm512_loadu_si512(b + i));
        acc = _mm512_min_epi64(_mm512_max_epi64(acc, lo), hi);
        __m512i v = _mm512_sra_epi64(_mm512_add_epi64(_mm512_mullo_epi64(acc, vmult), round_y), shy);
        v = _mm512_min_epi64(_mm512_max_epi64(_mm512_add_epi64(v, vzy), zero), vq);
        if (sizeof(TY) == 1) _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), _mm512_cvtepi64_epi8(v));
        else _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm512_cvtepi64_epi16(v));
    }
    return i;
}
QNNB_AVX512_END
#endif

bool prepare_norm(Node& n, std::string& err) {
    if (refused(n, err)) return false;
    if (!check_int_operand(n.input(0), err) || !check_int_operand(n.input(1), err) ||
        !check_int_output(n.output(0), err))
        return false;
    const Tensor* x = n.in[0];
    if (x->is_const() || (x->dtype != QNNB_UINT8 && x->dtype != QNNB_UINT16)) {
        err = "input must be an 8- or 16-bit activation";
        return false;
    }
    auto& s = n.make_state<NormState>();
    s.instance = n.op == "InstanceNormalization";
    if (s.instance) {
        if (x->rank() < 2) {
            err = "expects x of rank >= 2";
            return false;
        }
        s.channels = x->dim(1);
        s.rows = x->dim(0) * s.channels;
        s.cols = product(x->shape, 2, x->shape.size());
    } else {
        const int64_t axis = n.params.i("axis", x->rank() - 1);
        if (axis < 0 || axis >= x->rank()) {
            err = "axis out of range";
            return false;
        }
        s.rows = product(x->shape, 0, static_cast<size_t>(axis));
        s.cols = product(x->shape, static_cast<size_t>(axis), x->shape.size());
    }
    const int64_t per = s.instance ? s.channels : s.cols;
    s.gamma = n.in[1];
    if (s.gamma->numel() != per) {
        err = "scale must hold one value per " + std::string(s.instance ? "channel" : "normalised element");
        return false;
    }
    if (s.gamma->dtype == QNNB_INT4 || s.gamma->dtype == QNNB_INT32) {
        err = "scale must be an 8- or 16-bit integer tensor";
        return false;
    }
    s.zp_g = zero_point(*s.gamma);
    s.g.assign(static_cast<size_t>(per), 0);
    if (s.gamma->is_const())
        with_int_type(s.gamma->dtype, [&](auto tg) {
            using TG = decltype(tg);
            for (int64_t i = 0; i < per; ++i) s.g[i] = static_cast<int32_t>(s.gamma->in<TG>()[i]) - s.zp_g;
        });
    const bool has_bias = n.input(2) != nullptr;
    s.bias = n.params.ints("npu_bias");
    if (!has_bias) s.bias.assign(static_cast<size_t>(per), 0);
    if (static_cast<int64_t>(s.bias.size()) != per) {
        err = "parameter npu_bias missing or of the wrong length (convert the model for the npu again)";
        return false;
    }
    for (size_t i = 1; i < n.out.size(); ++i)
        if (n.out[i]) {
            err = refusal(n, "the Mean / InvStdDev outputs");
            return false;
        }
    s.zp_x = zero_point(*x);
    s.zp_y = zero_point(*n.out[0]);
    s.qmax = qmax_of(*n.out[0]);
    s.mean_bits = static_cast<int32_t>(n.params.i("npu_mean_bits", 8));
    s.rsqrt_bits = static_cast<int32_t>(n.params.i("npu_rsqrt_bits", 32));
    s.eps = std::max<int64_t>(1, n.params.i("npu_eps", 1));
    if (!int_params(n, "npu_mult", 1, &s.mult, err) || !int_params(n, "npu_shift", 1, &s.shift, err)) return false;
    if (!n.params.has("npu_eps") || s.mean_bits < 0 || s.mean_bits > 8 || s.rsqrt_bits < 0 || s.rsqrt_bits > 32) {
        err = "parameters npu_eps/npu_mean_bits missing or out of range (convert the model for the npu again)";
        return false;
    }
    const int64_t limit = (int64_t{1} << 31) - 1;
    const int64_t d_bound = (x->dtype == QNNB_UINT8 ? int64_t{256} : int64_t{65536}) << (s.mean_bits + 1);
    s.fast = s.gamma->is_const() && 31 + s.shift >= 1 && 31 + s.shift <= 62 &&
             requantize(limit, s.mult, s.shift) + s.zp_y >= s.qmax && requantize(-limit, s.mult, s.shift) + s.zp_y <= 0;
    for (int32_t g : s.g) s.fast = s.fast && (g < 0 ? -int64_t{g} : int64_t{g}) * d_bound < (int64_t{1} << 31);
    s.avx512 = active_isa() == Isa::kAvx512Vnni;
    return true;
}

// (N29) one row: mean with mean_bits fraction bits, deviations d, W = sum d^2 + eps, and
// y = requantize(round(d g r_m / 2^(45 + e - R)) + B, M).
template <class Acc, class TX, class TY>
void norm_row(const NormState& s, const TX* __restrict x, TY* __restrict y, const int32_t* g, const int64_t* b,
              int64_t step_g) {
    const int64_t n = s.cols, zp_x = s.zp_x;
    const int k = s.mean_bits;
    const int32_t mult = s.mult, shift = s.shift, zp_y = s.zp_y, qmax = s.qmax;
    int64_t sum = 0;  // n x 65535: int64
    for (int64_t i = 0; i < n; ++i) sum += x[i];
    sum -= n * zp_x;
    const int64_t mean = floor_div(2 * (sum << k) + n, 2 * n);  // round(sum 2^k / n), half up
    Acc sq = 0;  // 8-bit: |d| < 2^17, n < 2^29 terms in int64; 16-bit: |d| < 2^25, int128
    for (int64_t i = 0; i < n; ++i) {
        const int64_t d = ((static_cast<int64_t>(x[i]) - zp_x) << k) - mean;
        sq += static_cast<Acc>(d * d);
    }
    const unsigned __int128 w = static_cast<unsigned __int128>(sq) + static_cast<unsigned __int128>(s.eps);
    const int e = (bit_length(w) - 29) >> 1;  // floor: m = w / 4^e in [2^28, 2^30)
    const uint64_t m = static_cast<uint64_t>(e >= 0 ? w >> (2 * e) : w << (-2 * e));
    const uint64_t r64 = isqrt64(static_cast<uint64_t>((static_cast<unsigned __int128>(1) << 90) / m));
    const int64_t r = static_cast<int64_t>(r64);  // <= 2^31
    const int sh = kRsqrtNormBits + e - s.rsqrt_bits;
    const bool narrow_shift = sh >= 1 && sh <= 62;
    if (s.fast && narrow_shift) {
        const int64_t round_u = int64_t{1} << (sh - 1), limit = (int64_t{1} << 31) - 1;
        const int ty = 31 + shift;
        const int64_t round_y = int64_t{1} << (ty - 1);
        int64_t i = 0;
#if QNNB_HAS_AVX512_PATHS
        if constexpr (std::is_same_v<TX, uint8_t> && (std::is_same_v<TY, uint8_t> || std::is_same_v<TY, uint16_t>))
            if (s.avx512 && step_g == 1) i = norm_fast_avx512(x, y, g, b, n, zp_x, k, mean, r, sh, ty, mult, zp_y, qmax);
#endif
        for (; i < n; ++i) {
            const int64_t d = ((static_cast<int64_t>(x[i]) - zp_x) << k) - mean;
            const int64_t u = (d * g[i * step_g] * r + round_u) >> sh;        // |d g| < 2^31: < 2^62
            int64_t acc = u + b[i * step_g];
            acc = acc < -limit ? -limit : (acc > limit ? limit : acc);         // beyond: saturated anyway
            const int64_t v = ((acc * mult + round_y) >> ty) + zp_y;            // (N2), (N3) in int64
            y[i] = static_cast<TY>(v < 0 ? 0 : (v > qmax ? qmax : v));
        }
        return;
    }
    for (int64_t i = 0; i < n; ++i) {
        const int64_t d = ((static_cast<int64_t>(x[i]) - zp_x) << k) - mean;
        const int64_t t = d * g[i * step_g];  // < 2^40
        int64_t u;
        if (narrow_shift && t > -(int64_t{1} << 31) && t < (int64_t{1} << 31))
            u = (t * r + (int64_t{1} << (sh - 1))) >> sh;  // |t r| < 2^62: exact in int64
        else
            u = static_cast<int64_t>(round_shift(static_cast<__int128>(t) * r, sh));  // < 2^71
        y[i] = static_cast<TY>(requantize_out_fast(u + b[i * step_g], mult, shift, zp_y, qmax));
    }
}

void run_norm(Node& n, const ExecContext& ctx) {
    NormState& s = n.state_as<NormState>();
    if (s.rows == 0 || s.cols == 0) return;
    if (!s.gamma->is_const())
        with_int_type(s.gamma->dtype, [&](auto tg) {
            using TG = decltype(tg);
            for (size_t i = 0; i < s.g.size(); ++i) s.g[i] = static_cast<int32_t>(s.gamma->in<TG>()[i]) - s.zp_g;
        });
    with_int_type(n.in[0]->dtype, [&](auto tx) {
        with_int_type(n.out[0]->dtype, [&](auto ty) {
            using TX = decltype(tx);
            using TY = decltype(ty);
            const TX* x = n.in[0]->in<TX>();
            TY* y = n.out[0]->out<TY>();
            const bool wide = n.in[0]->dtype == QNNB_UINT16;
            parallel_for(ctx, s.rows, [&](int64_t r) {
                const int64_t c = s.instance ? r % s.channels : 0;
                const int32_t* g = s.g.data() + c;
                const int64_t* b = s.bias.data() + c;
                const int64_t step = s.instance ? 0 : 1;  // per channel: one gamma for the row
                if (wide) norm_row<__int128>(s, x + r * s.cols, y + r * s.cols, g, b, step);
                else norm_row<int64_t>(s, x + r * s.cols, y + r * s.cols, g, b, step);
            });
        });
    });
}

const Kernel kKernels[] = {
    {"Softmax", prepare_softmax, run_softmax<false>},
    {"LogSoftmax", prepare_softmax, run_softmax<true>},
    {"LayerNormalization", prepare_norm, run_norm},
    {"InstanceNormalization", prepare_norm, run_norm},
    {"LRN", refuse, run_nothing},
    {"BatchNormalization", refuse, run_nothing},
};

}  // namespace

extern const KernelTable kNpuNormKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace npu
}  // namespace qnnb
