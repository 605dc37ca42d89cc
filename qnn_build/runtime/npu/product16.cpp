// The wide block kernel (product16.h): 16-bit activations times constant 8/16-bit weights, exact.
#include "product16.h"

#include "../core/isa.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace qnnb {
namespace npu {

namespace {

constexpr int64_t kLaneMax = (int64_t{1} << 31) - 1;
constexpr int64_t kMinFlush = 16;  // fewer pairs per int32 run than this: split rows instead

}  // namespace

void pack_wide(Node& n, uint32_t slot, const int16_t* b, int64_t ldb, int64_t k, int64_t cols, WideWeights& w) {
    w.k = k;
    w.n = cols;
    w.pairs = (k + 1) / 2;
    w.cblocks = (cols + kWideCols - 1) / kWideCols;
    int64_t wmax = 1;
    for (int64_t kk = 0; kk < k; ++kk)
        for (int64_t c = 0; c < cols; ++c) wmax = std::max<int64_t>(wmax, std::abs(static_cast<int64_t>(b[kk * ldb + c])));
    // A pair of products is at most 2 · max|x| · max|w|: |q − 32768| ≤ 32768 centred, 255 split.
    const int64_t centred_flush = kLaneMax / (2 * 32768 * wmax);
    w.split = centred_flush < kMinFlush;
    w.flush = w.split ? kLaneMax / (2 * 255 * wmax) : centred_flush;
    w.avx512 = active_isa() == Isa::kAvx512Vnni;
    const int64_t block = w.pairs * kWideCols * 2;
    w.data = n.prepared->get<int16_t>(slot, static_cast<size_t>(w.cblocks * block), [&](int16_t* data) {
        for (int64_t cb = 0; cb < w.cblocks; ++cb)
            for (int64_t kk = 0; kk < k; ++kk)
                for (int64_t c = cb * kWideCols; c < std::min(cols, (cb + 1) * kWideCols); ++c)
                    data[cb * block + ((kk / 2) * kWideCols + c - cb * kWideCols) * 2 + kk % 2] = b[kk * ldb + c];
    });
    w.colsum = n.prepared->get<int64_t>(slot + 1, static_cast<size_t>(cols), [&](int64_t* colsum) {
        for (int64_t kk = 0; kk < k; ++kk)
            for (int64_t c = 0; c < cols; ++c) colsum[c] += b[kk * ldb + c];
    });
}

void wide_rows(const WideWeights& w, const uint16_t* a, int64_t si, int64_t sk, int64_t i, int16_t* out) {
    const uint16_t* row = a + i * si;
    const int64_t len = 2 * w.pairs;
    if (w.split) {
        for (int64_t kk = 0; kk < w.k; ++kk) {
            out[kk] = static_cast<int16_t>(row[kk * sk] >> 8);
            out[len + kk] = static_cast<int16_t>(row[kk * sk] & 255);
        }
        std::fill(out + w.k, out + len, int16_t{0});
        std::fill(out + len + w.k, out + 2 * len, int16_t{0});
    } else {
        for (int64_t kk = 0; kk < w.k; ++kk) out[kk] = static_cast<int16_t>(static_cast<int32_t>(row[kk * sk]) - 32768);
        std::fill(out + w.k, out + len, int16_t{0});
    }
}

namespace {

#if defined(__AVX2__)

// R rows x 32 columns over pairs [p0, p1), added into sums: int32 lanes for at most `flush` pairs at
// a time, then widened into the int64 sums.
template <int R>
void block_avx2(const int16_t* wb, int64_t p0, int64_t p1, int64_t flush, const int16_t* const* rows, int64_t* sums) {
    for (int64_t q0 = p0; q0 < p1; q0 += flush) {
        const int64_t q1 = std::min(p1, q0 + flush);
        __m256i acc[R][4];
        for (int r = 0; r < R; ++r)
            for (int v = 0; v < 4; ++v) acc[r][v] = _mm256_setzero_si256();
        for (int64_t p = q0; p < q1; ++p) {
            const int16_t* wp = wb + p * kWideCols * 2;
            __m256i x[R];
            for (int r = 0; r < R; ++r) {
                int32_t pair;
                std::memcpy(&pair, rows[r] + 2 * p, 4);
                x[r] = _mm256_set1_epi32(pair);
            }
            for (int v = 0; v < 4; ++v) {
                const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + 16 * v));
                for (int r = 0; r < R; ++r) acc[r][v] = _mm256_add_epi32(acc[r][v], _mm256_madd_epi16(wv, x[r]));
            }
        }
        for (int r = 0; r < R; ++r)
            for (int v = 0; v < 4; ++v) {
                __m256i* t = reinterpret_cast<__m256i*>(sums + r * kWideCols + 8 * v);
                const __m256i lo = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(acc[r][v]));
                const __m256i hi = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(acc[r][v], 1));
                _mm256_storeu_si256(t, _mm256_add_epi64(_mm256_loadu_si256(t), lo));
                _mm256_storeu_si256(t + 1, _mm256_add_epi64(_mm256_loadu_si256(t + 1), hi));
            }
    }
}

#endif

#if defined(__AVX2__) && QNNB_HAS_AVX512_PATHS
}  // namespace
// ---- AVX-512 VNNI: `vpdpwssd` (int16 pairs into int32 lanes, no saturation), 32 columns in 2 registers
QNNB_AVX512_BEGIN
namespace {

// block_avx2's sums: the same products, the same int32 lanes flushed at the same bound, so the same sums.
template <int R>
void block_avx512(const int16_t* wb, int64_t p0, int64_t p1, int64_t flush, const int16_t* const* rows, int64_t* sums) {
    for (int64_t q0 = p0; q0 < p1; q0 += flush) {
        const int64_t q1 = std::min(p1, q0 + flush);
        __m512i acc[R][2];
        for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
        for (int64_t p = q0; p < q1; ++p) {
            const int16_t* wp = wb + p * kWideCols * 2;
            const __m512i w0 = _mm512_loadu_si512(wp), w1 = _mm512_loadu_si512(wp + 32);
            for (int r = 0; r < R; ++r) {
                int32_t pair;
                std::memcpy(&pair, rows[r] + 2 * p, 4);
                const __m512i x = _mm512_set1_epi32(pair);
                acc[r][0] = _mm512_dpwssd_epi32(acc[r][0], x, w0);
                acc[r][1] = _mm512_dpwssd_epi32(acc[r][1], x, w1);
            }
        }
        for (int r = 0; r < R; ++r)
            for (int v = 0; v < 2; ++v) {
                int64_t* t = sums + r * kWideCols + 16 * v;
                const __m512i lo = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(acc[r][v]));
                const __m512i hi = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(acc[r][v], 1));
                _mm512_storeu_si512(t, _mm512_add_epi64(_mm512_loadu_si512(t), lo));
                _mm512_storeu_si512(t + 8, _mm512_add_epi64(_mm512_loadu_si512(t + 8), hi));
            }
    }
}

// wide_out's vector form: requantize(total, mult, shift) for |total| < 2^63, mult in [0, 2^31) and
// t = 31 + shift in [32, 63], in int64 lanes. With total = h · 2^32 + l (l the low 32 bits, unsigned):
// total · mult + 2^(t−1) = h·mult · 2^32 + L, L = l·mult + 2^(t−1) < 2^63 + 2^62 (no wrap as unsigned);
// with L = Lh · 2^32 + Ll that is (h·mult + Lh) · 2^32 + Ll, and as Ll < 2^32 ≤ 2^t its floor over 2^t
// is (h·mult + Lh) >> (t − 32), |h·mult| < 2^62. Then + zp_y and the clamp, in int64 as out_fast does.
void out_avx512(const WideOut& o, const ChannelParams& p, bool split, int64_t col0, int64_t cn, const int64_t* sums,
                int32_t* q) {
    const __m512i zp = _mm512_set1_epi64(p.zp_y), zero = _mm512_setzero_si512(), qmax = _mm512_set1_epi64(p.qmax);
    for (int64_t c = 0; c < cn; c += 8) {
        const __mmask8 m = static_cast<__mmask8>(cn - c >= 8 ? 0xff : (1u << (cn - c)) - 1);
        __m512i s = _mm512_maskz_loadu_epi64(m, sums + c);
        if (split) s = _mm512_add_epi64(_mm512_slli_epi64(s, 8), _mm512_maskz_loadu_epi64(m, sums + kWideCols + c));
        if (p.sign < 0) s = _mm512_sub_epi64(zero, s);
        if (p.sign == 0) s = zero;
        const int64_t col = col0 + c;
        const __m512i total = _mm512_add_epi64(s, _mm512_maskz_loadu_epi64(m, o.comp.data() + col));
        const __m512i mult = _mm512_maskz_loadu_epi64(m, o.mult.data() + col);
        const __m512i high = _mm512_mul_epi32(_mm512_srai_epi64(total, 32), mult);
        const __m512i low = _mm512_add_epi64(_mm512_mul_epu32(total, mult), _mm512_maskz_loadu_epi64(m, o.round.data() + col));
        const __m512i sum = _mm512_add_epi64(high, _mm512_srli_epi64(low, 32));
        __m512i r = _mm512_add_epi64(_mm512_srav_epi64(sum, _mm512_maskz_loadu_epi64(m, o.tshift.data() + col)), zp);
        r = _mm512_min_epi64(_mm512_max_epi64(r, zero), qmax);
        _mm256_mask_storeu_epi32(q + c, m, _mm512_cvtepi64_epi32(r));
    }
}

void wide_block_avx512(const int16_t* wb, int64_t p0, int64_t p1, int64_t flush, const int16_t* const* rows, int count,
                       int64_t* sums) {
    switch (count) {
        case 1: return block_avx512<1>(wb, p0, p1, flush, rows, sums);
        case 2: return block_avx512<2>(wb, p0, p1, flush, rows, sums);
        case 3: return block_avx512<3>(wb, p0, p1, flush, rows, sums);
        case 4: return block_avx512<4>(wb, p0, p1, flush, rows, sums);
        case 5: return block_avx512<5>(wb, p0, p1, flush, rows, sums);
        case 6: return block_avx512<6>(wb, p0, p1, flush, rows, sums);
        case 7: return block_avx512<7>(wb, p0, p1, flush, rows, sums);
        default: return block_avx512<8>(wb, p0, p1, flush, rows, sums);
    }
}

}  // namespace
QNNB_AVX512_END
namespace {
#endif

#if !defined(__AVX2__)

// The same sums in int64 arithmetic, one product at a time.
template <int R>
void block_scalar(const int16_t* wb, int64_t p0, int64_t p1, const int16_t* const* rows, int64_t* sums) {
    for (int r = 0; r < R; ++r) {
        int64_t* out = sums + r * kWideCols;
        for (int64_t p = p0; p < p1; ++p) {
            const int16_t* wp = wb + p * kWideCols * 2;
            const int64_t x0 = rows[r][2 * p], x1 = rows[r][2 * p + 1];
            for (int c = 0; c < kWideCols; ++c) out[c] += x0 * wp[2 * c] + x1 * wp[2 * c + 1];
        }
    }
}

#endif

}  // namespace

void prepare_wide_out(const WideWeights& w, const ChannelParams& p, int32_t zp_a, WideOut& o) {
    const int64_t offset = w.split ? -static_cast<int64_t>(zp_a) : 32768 - static_cast<int64_t>(zp_a);
    const size_t cols = static_cast<size_t>(w.cblocks * kWideCols);  // whole blocks: masked lanes read in range
    o.zp_a = zp_a;
    o.comp.assign(cols, 0);
    o.mult.assign(cols, 0);
    o.round.assign(cols, 0);
    o.tshift.assign(cols, 0);
    o.vector_block.assign(static_cast<size_t>(w.cblocks), w.avx512 ? 1 : 0);
    for (int64_t c = 0; c < w.n; ++c) {
        const size_t i = static_cast<size_t>(c);
        o.comp[i] = p.sign * offset * w.colsum[i] + p.bias[i];
        const int64_t t = 31 + static_cast<int64_t>(p.shift[i]);
        if (t < 32 || t > 63) {
            o.vector_block[static_cast<size_t>(c / kWideCols)] = 0;
            continue;
        }
        o.mult[i] = p.mult[i];
        o.round[i] = int64_t{1} << (t - 1);
        o.tshift[i] = t - 32;
    }
}

void wide_out(const WideWeights& w, const WideOut& o, const ChannelParams& p, int64_t cb, int64_t cn,
              const int64_t* sums, int32_t* q) {
    const int64_t c0 = cb * kWideCols;
#if defined(__AVX2__) && QNNB_HAS_AVX512_PATHS
    if (o.vector_block[static_cast<size_t>(cb)]) return out_avx512(o, p, w.split, c0, cn, sums, q);
#endif
    for (int64_t c = 0; c < cn; ++c) q[c] = p.out_fast(c0 + c, p.sign * wide_acc(w, sums, c, c0 + c, o.zp_a) + p.bias[c0 + c]);
}

void wide_block(const WideWeights& w, int64_t cb, int64_t p0, int64_t p1, const int16_t* const* rows, int count,
                int64_t* sums) {
    const int16_t* wb = w.data.data() + cb * w.pairs * kWideCols * 2;
#if defined(__AVX2__) && QNNB_HAS_AVX512_PATHS
    if (w.avx512) return wide_block_avx512(wb, p0, p1, w.flush, rows, count, sums);
#endif
    for (int r = 0; r < count; r += 2) {  // two rows at a time: 8 accumulators and 4 weight vectors
#if defined(__AVX2__)
        if (count - r == 1) block_avx2<1>(wb, p0, p1, w.flush, rows + r, sums + r * kWideCols);
        else block_avx2<2>(wb, p0, p1, w.flush, rows + r, sums + r * kWideCols);
#else
        if (count - r == 1) block_scalar<1>(wb, p0, p1, rows + r, sums + r * kWideCols);
        else block_scalar<2>(wb, p0, p1, rows + r, sums + r * kWideCols);
#endif
    }
}

}  // namespace npu
}  // namespace qnnb
