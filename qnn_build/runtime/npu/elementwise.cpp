// Integer Add, Sub, Mul with broadcasting: docs/npu.md (N4), (N5).
#include <algorithm>
#include <type_traits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "../core/broadcast.h"
#include "../core/isa.h"
#include "../core/parallel.h"
#include "../core/prepared.h"
#include "code_table.h"

namespace qnnb {
namespace npu {
namespace {

struct BinaryState {
    BroadcastPlan plan;
    int32_t zp_a = 0, zp_b = 0, zp_y = 0, qmax = 0;
    int32_t left_shift = 0;
    int32_t mult[3] = {0, 0, 0}, shift[3] = {0, 0, 0};  // a, b, y (Mul uses [0] only)
    // An 8-bit activation with a one-element constant (x + 1, x · 0.5): y is a function of x's
    // code, tabulated at prepare by the same row loop (prepared array 0). `varying`: x's input
    // index; -1 otherwise.
    int varying = -1;
    ArrayView<int32_t> table;
    // Two 8-bit operands whose every sum stays in int64 (checked at prepare): Add/Sub's terms
    // requantize(v << left_shift) tabulated by code (prepared arrays 1 and 2), and the last
    // requantization in its int64 form (requantize.h), which is requantize() there.
    bool narrow = false;
    ArrayView<int64_t> term_a, term_b;
    Int64Requantize last;
    // narrow on AVX-512 (core/isa.h), 8 elements a step: the terms computed in int64 lanes by their
    // Int64Requantize forms, checked at prepare to equal term_a and term_b for every code.
    bool narrow_avx512 = false;
    Int64Requantize first[2];
    // Long rows where one operand is an 8-bit code along the row and the other holds one value for
    // the whole row (x + bias[c], x · scale[c], an SE block's x · gate[c]): per row, binary_row over
    // the 256 codes with that value, then one lookup per element. `row_varying`: the code operand.
    int row_varying = -1;
    bool fast_lookup = false;  // fast_byte_lookup() at prepare
    // Add/Sub of an 8-bit activation and a constant of any width (x + bias with a 16-bit bias,
    // L = 30), where neither form above applies and the last shift t = 31 + shift_y is in [1, 62]:
    // each term r, the activation's by code (prepared array 3) and the constant's per element
    // (array 4, in the constant's layout), is held as r · mult_y + (x's: 2^(t−1)) split at 2^t into
    // {hi, lo} with lo in [0, 2^t), so that requantize(ra ± rb) = hi_a + hi_b + (lo_a + lo_b >= 2^t):
    // (N4)'s last step in int64 without a product. Sub negates the subtrahend's term before the split.
    int const_varying = -1;  // the activation's input index
    ArrayView<int64_t> split_x, split_c;  // {hi, lo} pairs
    int64_t split_one = 0;                // 2^t
    bool const_avx512 = false;            // 8 elements a step on AVX-512, a uint8 output (core/isa.h)
    // Add/Sub of any other 8/16-bit operands (an LSTM's 16-bit gate sums): each term
    // requantize(v << L, M_k) as (v · mult + 2^(t−1−L)) >> (t − L) in int64 (exact when t > L: the
    // 2^L divides out), the last requantization one branchless 128-bit product; Mul: va · vb
    // (|va · vb| < 2^32) and the same last product.
    bool wide = false;
    Int64Requantize wide_first[2];
    int32_t wide_mult = 0, wide_t = 1;  // the last requantization's, t in [1, 126]
};

// Rows at least this long take BinaryState::row_varying: 4 elements per table entry computed.
constexpr int64_t kRowTableMin = 1024;

template <int Op>
void tabulate(Node& n, BinaryState& s);

// BinaryState::narrow for two uint8 operands when the last requantization takes int64 arithmetic
// for every pair of codes: |a term ± b term| (Mul: |va · vb| <= 255^2) below 2^31, t in [1, 62].
template <int Op>
void prepare_narrow(Node& n, BinaryState& s) {
    if (n.in[0]->dtype != QNNB_UINT8 || n.in[1]->dtype != QNNB_UINT8) return;
    const int f = Op == 2 ? 0 : 2;
    const int64_t t = 31 + static_cast<int64_t>(s.shift[f]);
    if (t < 1 || t > 62) return;
    uint64_t bound = 255 * 255;
    if (Op != 2) {
        auto terms = [&](uint32_t slot, int32_t zp, int k) {
            return n.prepared->get<int64_t>(slot, 256, [&](int64_t* t) {
                for (int q = 0; q < 256; ++q)  // (N4)
                    t[q] = requantize(static_cast<int64_t>(q - zp) << s.left_shift, s.mult[k], s.shift[k]);
            });
        };
        s.term_a = terms(1, s.zp_a, 0);
        s.term_b = terms(2, s.zp_b, 1);
        // The bound is checked on the terms as held, so terms from a context binary are checked too.
        auto magnitude = [](const ArrayView<int64_t>& t) {
            uint64_t m = 0;
            for (size_t q = 0; q < t.size(); ++q)
                m = std::max(m, t[q] < 0 ? 0 - static_cast<uint64_t>(t[q]) : static_cast<uint64_t>(t[q]));
            return m;
        };
        const uint64_t max_a = magnitude(s.term_a), max_b = magnitude(s.term_b);
        if (max_a >= (uint64_t{1} << 31) || max_b >= (uint64_t{1} << 31)) return;  // and the sum cannot wrap
        bound = max_a + max_b;
    }
    if (bound >= (uint64_t{1} << 31)) return;
    s.last = Int64Requantize::of(s.mult[f], s.shift[f]);
    s.narrow = true;
    if (!QNNB_HAS_AVX512_PATHS || active_isa() != Isa::kAvx512Vnni || n.out[0]->dtype != QNNB_UINT8) return;
    if (Op != 2) {
        if (s.left_shift < 0 || s.left_shift > 22) return;  // (q − zp) << L within int32
        for (int k = 0; k < 2; ++k) {
            s.first[k] = Int64Requantize::of(s.mult[k], s.shift[k]);
            const ArrayView<int64_t>& held = k == 0 ? s.term_a : s.term_b;
            const int32_t zp = k == 0 ? s.zp_a : s.zp_b;
            for (int q = 0; q < 256; ++q)
                if (!s.first[k].exact || s.first[k].apply(static_cast<int64_t>(q - zp) << s.left_shift) != held[q]) return;
        }
    }
    s.narrow_avx512 = true;
}

// The constant's terms are a prepared array carried in a context binary: 16 bytes per element.
constexpr int64_t kConstTermsMax = 1 << 16;

// BinaryState::const_varying for Add/Sub of an 8-bit activation and a constant.
template <int Op>
void prepare_const_terms(Node& n, BinaryState& s) {
    const int v = n.in[0]->dtype == QNNB_UINT8 && !n.in[0]->is_const() && n.in[1]->is_const() ? 0
                : n.in[1]->dtype == QNNB_UINT8 && !n.in[1]->is_const() && n.in[0]->is_const() ? 1 : -1;
    const int64_t t = 31 + static_cast<int64_t>(s.shift[2]);
    if (v < 0 || s.left_shift < 0 || s.left_shift > 32 || t < 1 || t > 62) return;
    const Tensor* c = n.in[1 - v];
    if (c->numel() > kConstTermsMax) return;
    const int32_t zp[2] = {s.zp_a, s.zp_b};
    const int64_t one = int64_t{1} << t;
    // {hi, lo} of operand k's term for code q; the sums and products below are within 2^93.
    auto split = [&](int64_t q, int k, int64_t* out) {
        int64_t r = requantize((q - zp[k]) << s.left_shift, s.mult[k], s.shift[k]);  // (N4)
        if (Op == 1 && k == 1) r = -r;
        const __int128 p = static_cast<__int128>(r) * s.mult[2] + (k == v ? one / 2 : 0);
        const __int128 hi = p >= 0 ? p / one : -((-p + one - 1) / one);  // floor
        out[0] = static_cast<int64_t>(hi);
        out[1] = static_cast<int64_t>(p - hi * one);
    };
    s.split_x = n.prepared->get<int64_t>(3, 2 * 256, [&](int64_t* t2) {
        for (int q = 0; q < 256; ++q) split(q, v, t2 + 2 * q);
    });
    s.split_c = n.prepared->get<int64_t>(4, 2 * static_cast<size_t>(c->numel()), [&](int64_t* t2) {
        with_int_type(c->dtype, [&](auto tc) {
            const auto* cp = c->in<decltype(tc)>();
            for (int64_t i = 0; i < c->numel(); ++i) split(cp[i], 1 - v, t2 + 2 * i);
        });
    });
    // Checked on the pairs as held, so pairs from a context binary cannot overflow the sums.
    for (const ArrayView<int64_t>* a : {&s.split_x, &s.split_c})
        for (size_t i = 0; i < a->size(); i += 2)
            if ((*a)[i] <= -(int64_t{1} << 61) || (*a)[i] >= (int64_t{1} << 61) || (*a)[i + 1] < 0 || (*a)[i + 1] >= one)
                return;
    s.split_one = one;
    s.const_varying = v;
    s.const_avx512 = QNNB_HAS_AVX512_PATHS && active_isa() == Isa::kAvx512Vnni && n.out[0]->dtype == QNNB_UINT8;
}

// BinaryState::wide: operands of at most 16 bits (|v| < 2^16, so |v · mult| < 2^47), each Add/Sub
// term's t − L in [1, 62], the last t in [1, 126].
template <int Op>
void prepare_wide(Node& n, BinaryState& s) {
    for (int k = 0; k < 2; ++k) {
        const int64_t t = 31 + static_cast<int64_t>(s.shift[k]) - s.left_shift;
        if (n.in[k]->encoding.bitwidth > 16) return;
        if (Op != 2 && (s.left_shift < 0 || t < 1 || t > 62)) return;
        if (Op != 2) s.wide_first[k] = Int64Requantize::of(s.mult[k], static_cast<int32_t>(t - 31));
    }
    const int last = Op == 2 ? 0 : 2;
    const int64_t t = 31 + static_cast<int64_t>(s.shift[last]);
    if (t < 1 || t > 126) return;
    s.wide_mult = s.mult[last];
    s.wide_t = static_cast<int32_t>(t);
    s.wide = true;
}

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
    if (s.varying >= 0) return true;
    prepare_narrow<Op>(n, s);
    for (int v = 0; v < 2 && s.plan.inner >= kRowTableMin; ++v)
        if (n.in[v]->dtype == QNNB_UINT8 && s.plan.inner_stride[v] == 1 && s.plan.inner_stride[1 - v] == 0) {
            s.row_varying = v;
            s.fast_lookup = fast_byte_lookup();
            break;
        }
    if (Op != 2 && !s.narrow && s.row_varying < 0) prepare_const_terms<Op>(n, s);
    if (!s.narrow && s.row_varying < 0 && s.const_varying < 0) prepare_wide<Op>(n, s);
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
    const int v = code_table_operand(n);
    if (v >= 0) {
        const Tensor* c = n.in[1 - v];
        const uint8_t* codes = kAllCodes.q;
        s.table = n.prepared->get<int32_t>(0, 256, [&](int32_t* table) {
            with_int_type(c->dtype, [&](auto tc) {
                using TC = decltype(tc);
                const TC* cp = c->in<TC>();
                if (v == 0) binary_row<Op>(s, codes, 1, cp, 0, table, 256);
                else binary_row<Op>(s, cp, 0, codes, 1, table, 256);
            });
        });
        s.varying = v;
    }
}


// binary_row for BinaryState::narrow: the same integers, without 128-bit arithmetic or branches.
template <int Op, class TY>
void narrow_row(const BinaryState& s, const uint8_t* a, int64_t sa, const uint8_t* b, int64_t sb, TY* y, int64_t n) {
    const int64_t* ta = s.term_a.data();
    const int64_t* tb = s.term_b.data();
    for (int64_t i = 0; i < n; ++i) {
        int64_t v;
        if (Op == 2) v = (static_cast<int64_t>(a[i * sa]) - s.zp_a) * (static_cast<int64_t>(b[i * sb]) - s.zp_b);  // (N5)
        else v = Op == 0 ? ta[a[i * sa]] + tb[b[i * sb]] : ta[a[i * sa]] - tb[b[i * sb]];          // (N4)
        const int64_t q = s.last.apply(v) + s.zp_y;
        y[i] = static_cast<TY>(q < 0 ? 0 : (q > s.qmax ? s.qmax : q));
    }
}

#if QNNB_HAS_AVX512_PATHS
#define QNNB_ELEMENTWISE_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))

QNNB_ELEMENTWISE_AVX512 inline __m512i apply_avx512(const Int64Requantize& r, __m512i v) {  // r.apply, 8 lanes
    const __m512i prod = _mm512_mul_epi32(v, _mm512_set1_epi64(r.mult));                // |v| < 2^31
    return _mm512_sra_epi64(_mm512_add_epi64(prod, _mm512_set1_epi64(r.round)), _mm_cvtsi64_si128(r.t));
}

// narrow_row on contiguous operands and a uint8 output, 8 elements a step (a masked tail).
template <int Op>
QNNB_ELEMENTWISE_AVX512 void narrow_row_avx512(const BinaryState& s, const uint8_t* a, const uint8_t* b, uint8_t* y,
                                               int64_t n) {
    const __m512i zp_a = _mm512_set1_epi64(s.zp_a), zp_b = _mm512_set1_epi64(s.zp_b), zp_y = _mm512_set1_epi64(s.zp_y);
    const __m512i zero = _mm512_setzero_si512(), qmax = _mm512_set1_epi64(s.qmax);
    const __m128i left = _mm_cvtsi64_si128(s.left_shift);
    for (int64_t i = 0; i < n; i += 8) {
        const __mmask8 m = n - i >= 8 ? __mmask8(0xFF) : static_cast<__mmask8>((1u << (n - i)) - 1);
        const __m512i va = _mm512_sub_epi64(_mm512_cvtepu8_epi64(_mm_maskz_loadu_epi8(m, a + i)), zp_a);
        const __m512i vb = _mm512_sub_epi64(_mm512_cvtepu8_epi64(_mm_maskz_loadu_epi8(m, b + i)), zp_b);
        __m512i v;
        if (Op == 2) {
            v = _mm512_mul_epi32(va, vb);  // (N5)
        } else {
            const __m512i ra = apply_avx512(s.first[0], _mm512_sll_epi64(va, left));  // (N4)
            const __m512i rb = apply_avx512(s.first[1], _mm512_sll_epi64(vb, left));
            v = Op == 0 ? _mm512_add_epi64(ra, rb) : _mm512_sub_epi64(ra, rb);
        }
        const __m512i q = _mm512_min_epi64(_mm512_max_epi64(_mm512_add_epi64(apply_avx512(s.last, v), zp_y), zero), qmax);
        _mm512_mask_cvtepi64_storeu_epi8(y + i, m, q);
    }
}
#endif

// binary_row for BinaryState::wide: the same integers, the terms in int64 and no branches.
template <int Op, class TA, class TB, class TY>
void wide_row(const BinaryState& s, const TA* a, int64_t sa, const TB* b, int64_t sb, TY* y, int64_t n) {
    const __int128 round = static_cast<__int128>(1) << (s.wide_t - 1);
    for (int64_t i = 0; i < n; ++i) {
        const int64_t va = static_cast<int64_t>(a[i * sa]) - s.zp_a, vb = static_cast<int64_t>(b[i * sb]) - s.zp_b;
        int64_t v;
        if (Op == 2) {
            v = va * vb;  // (N5)
        } else {
            const int64_t ra = s.wide_first[0].apply(va), rb = s.wide_first[1].apply(vb);  // (N4)
            v = Op == 0 ? ra + rb : ra - rb;
        }
        const __int128 prod = static_cast<__int128>(v) * s.wide_mult;
        const int64_t q = static_cast<int64_t>((prod + round) >> s.wide_t) + s.zp_y;
        y[i] = static_cast<TY>(q < 0 ? 0 : (q > s.qmax ? s.qmax : q));
    }
}

// binary_row for BinaryState::const_varying: x the activation's codes, c the constant's {hi, lo}.
template <class TY>
void const_terms_row(const BinaryState& s, const uint8_t* x, int64_t sx, const int64_t* c, int64_t sc, TY* y, int64_t n) {
    const int64_t* tx = s.split_x.data();
    for (int64_t i = 0; i < n; ++i) {
        const int64_t* px = tx + 2 * x[i * sx];
        const int64_t* pc = c + 2 * i * sc;
        const int64_t q = px[0] + pc[0] + (px[1] + pc[1] >= s.split_one) + s.zp_y;
        y[i] = static_cast<TY>(q < 0 ? 0 : (q > s.qmax ? s.qmax : q));
    }
}

#if QNNB_HAS_AVX512_PATHS
// const_terms_row on contiguous codes and terms and a uint8 output, 8 elements a step: the code's
// {hi, lo} gathered, the constant's pairs split by a permute; the tail in the scalar loop.
QNNB_ELEMENTWISE_AVX512 void const_terms_row_avx512(const BinaryState& s, const uint8_t* x, const int64_t* c,
                                                    uint8_t* y, int64_t n) {
    const long long* tx = reinterpret_cast<const long long*>(s.split_x.data());
    const __m512i even = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), odd = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
    const __m512i one = _mm512_set1_epi64(s.split_one), zp_y = _mm512_set1_epi64(s.zp_y);
    const __m512i zero = _mm512_setzero_si512(), qmax = _mm512_set1_epi64(s.qmax), carry = _mm512_set1_epi64(1);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m512i at = _mm512_slli_epi64(_mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i))), 1);
        const __m512i hi_x = _mm512_i64gather_epi64(at, tx, 8), lo_x = _mm512_i64gather_epi64(at, tx + 1, 8);
        const __m512i c0 = _mm512_loadu_si512(c + 2 * i), c1 = _mm512_loadu_si512(c + 2 * i + 8);
        const __m512i hi_c = _mm512_permutex2var_epi64(c0, even, c1), lo_c = _mm512_permutex2var_epi64(c0, odd, c1);
        __m512i q = _mm512_add_epi64(_mm512_add_epi64(hi_x, hi_c), zp_y);
        q = _mm512_mask_add_epi64(q, _mm512_cmpge_epi64_mask(_mm512_add_epi64(lo_x, lo_c), one), q, carry);
        _mm512_mask_cvtepi64_storeu_epi8(y + i, 0xFF, _mm512_min_epi64(_mm512_max_epi64(q, zero), qmax));
    }
    const_terms_row(s, x + i, 1, c + 2 * i, 1, y + i, n - i);
}
#endif

// One row of BinaryState::row_varying: a has the codes along the row when row_varying is 0 (b one
// value), b otherwise.
template <int Op, class TA, class TB, class TY>
void table_row(const BinaryState& s, const TA* a, const TB* b, TY* y, int64_t n) {
    int32_t table[256];
    auto look = [&](const uint8_t* x) {
        if constexpr (std::is_same_v<TY, uint8_t>) lookup_bytes(x, y, table, n, s.fast_lookup);
        else lookup(x, y, table, n);
    };
    if constexpr (std::is_same_v<TA, uint8_t>) {
        if (s.row_varying == 0) {
            binary_row<Op>(s, kAllCodes.q, 1, b, 0, table, 256);
            return look(a);
        }
    }
    if constexpr (std::is_same_v<TB, uint8_t>) {
        binary_row<Op>(s, a, 0, kAllCodes.q, 1, table, 256);
        look(b);
    }
}

template <int Op>
void run_const_terms(Node& n, const BinaryState& s, const ExecContext& ctx) {
    const int v = s.const_varying;
    const uint8_t* x = n.in[v]->in<uint8_t>();
    with_int_type(n.out[0]->dtype, [&](auto ty) {
        using TY = decltype(ty);
        TY* y = n.out[0]->out<TY>();
        parallel_for(ctx, s.plan.outer, [&](int64_t row) {
            int64_t off[2];
            s.plan.offsets(row, off);
            const int64_t sx = s.plan.inner_stride[v], sc = s.plan.inner_stride[1 - v];
            TY* py = y + row * s.plan.inner;
#if QNNB_HAS_AVX512_PATHS
            if constexpr (std::is_same_v<TY, uint8_t>) {
                if (s.const_avx512 && sx == 1 && sc == 1)
                    return const_terms_row_avx512(s, x + off[v], s.split_c.data() + 2 * off[1 - v], py, s.plan.inner);
            }
#endif
            const_terms_row(s, x + off[v], sx, s.split_c.data() + 2 * off[1 - v], sc, py, s.plan.inner);
        });
    });
}

template <int Op>
void run_binary(Node& n, const ExecContext& ctx) {
    const BinaryState& s = n.state_as<BinaryState>();
    if (s.varying >= 0) {
        apply_code_table(*n.in[s.varying], *n.out[0], s.table.data(), ctx);
        return;
    }
    if (s.const_varying >= 0) return run_const_terms<Op>(n, s, ctx);
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
                    if (s.row_varying >= 0) return table_row<Op>(s, a + off[0], b + off[1], y + row * s.plan.inner, s.plan.inner);
                    if constexpr (sizeof(TA) == 1 && sizeof(TB) == 1 && !std::is_signed_v<TA> && !std::is_signed_v<TB>) {
#if QNNB_HAS_AVX512_PATHS
                        if constexpr (std::is_same_v<TY, uint8_t>) {
                            if (s.narrow_avx512 && s.plan.inner_stride[0] == 1 && s.plan.inner_stride[1] == 1)
                                return narrow_row_avx512<Op>(s, a + off[0], b + off[1], y + row * s.plan.inner, s.plan.inner);
                        }
#endif
                        if (s.narrow)
                            return narrow_row<Op>(s, a + off[0], s.plan.inner_stride[0], b + off[1],
                                                  s.plan.inner_stride[1], y + row * s.plan.inner, s.plan.inner);
                    }
                    if (s.wide)
                        return wide_row<Op>(s, a + off[0], s.plan.inner_stride[0], b + off[1], s.plan.inner_stride[1],
                                            y + row * s.plan.inner, s.plan.inner);
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
