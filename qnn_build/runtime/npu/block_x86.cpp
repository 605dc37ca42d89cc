// The block kernel of the fast paths (N15) and its requantization on x86-64: an AVX2 form (the
// baseline, x86-64-v3) and an AVX-512 VNNI form compiled for AVX-512 alone (core/isa.h), taken when
// the CPU has it. Both compute the same int32 sums Σ x·w (x unsigned, w signed) and requantize them
// by (N2)-(N3) exactly, so they give the same bytes (tests/npu/test_npu_isa.py forces each).
#include "conv_common.h"

#if defined(__AVX2__)
#include <immintrin.h>

#include <cstring>

#include "../core/isa.h"

namespace qnnb {
namespace npu {
namespace {

// ---- AVX2: u8 x s8 through int16 (vpmaddwd, exact: a pair of products is at most 2 · 255 · 128) ----

// Channels 16v .. 16v + 15 of one row: four accumulators of 4 channels x 2 pair sums each.
template <int NV>
void row_avx2(const int8_t* w, int64_t taps, int64_t kq, const uint8_t* row, const int64_t* tap_off, int v,
              int32_t* out) {
    __m256i c[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
    for (int64_t t = 0; t < taps; ++t) {
        const uint8_t* x = row + tap_off[t];
        const int8_t* wt = w + t * kq * NV * 64 + v * 64;
        for (int64_t q = 0; q < kq; ++q) {
            int32_t x4;
            std::memcpy(&x4, x + 4 * q, 4);
            const __m256i xv = _mm256_cvtepu8_epi16(_mm_set1_epi32(x4));  // x0 x1 x2 x3, four times
            const int8_t* wq = wt + q * NV * 64;
            for (int j = 0; j < 4; ++j) {
                const __m256i wv = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wq + 16 * j)));
                c[j] = _mm256_add_epi32(c[j], _mm256_madd_epi16(wv, xv));
            }
        }
    }
    // Pair sums -> one int32 per channel, channels in order.
    for (int h = 0; h < 2; ++h) {
        const __m256i s = _mm256_permute4x64_epi64(_mm256_hadd_epi32(c[2 * h], c[2 * h + 1]), 0xD8);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8 * h), s);
    }
}

template <int NV>
void block_avx2(const int8_t* w, int64_t taps, int64_t kq, const uint8_t* const* rows, const int64_t* tap_off,
                int32_t* acc) {
    for (int r = 0; r < kVnniRows; ++r)
        for (int v = 0; v < NV; ++v) row_avx2<NV>(w, taps, kq, rows[r], tap_off, v, acc + r * kVnniBlock + 16 * v);
}

// (N2)-(N3) per channel: the int64 form (requantize.h) where total fits it, the reference otherwise.
void requant_scalar(const VnniRequant& rq, int64_t c0, int vectors, const int32_t* acc, int rows, int32_t* out) {
    for (int r = 0; r < rows; ++r)
        for (int i = 0; i < 16 * vectors; ++i) {
            const int64_t c = c0 + i, a = acc[r * kVnniBlock + i];
            const int64_t total = (rq.negate ? -a : a) + rq.comp[c];
            out[r * kVnniBlock + i] = !rq.scalar_only && fits_int64_requantize(total)
                                          ? saturate(((total * rq.mult[c] + rq.round[c]) >> rq.t[c]) + rq.zp, rq.qmax)
                                          : requantize_out(total, rq.mult32[c], rq.shift32[c], rq.zp, rq.qmax);
        }
}

}  // namespace

#if QNNB_HAS_AVX512_PATHS
// ---- AVX-512 VNNI: _mm512_dpbusd_epi32, 6 rows x 64 channels in 24 registers -------------------------
QNNB_AVX512_BEGIN
namespace {

inline __m512i bcast4(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

template <int NV>
void block_avx512(const int8_t* w, int64_t taps, int64_t kq, const uint8_t* const* rows, const int64_t* tap_off,
                  int32_t* acc) {
    __m512i c[kVnniRows][NV];
    for (int r = 0; r < kVnniRows; ++r)
        for (int v = 0; v < NV; ++v) c[r][v] = _mm512_setzero_si512();
    for (int64_t t = 0; t < taps; ++t) {
        const int64_t off = tap_off[t];
        const uint8_t* r0 = rows[0] + off;
        const uint8_t* r1 = rows[1] + off;
        const uint8_t* r2 = rows[2] + off;
        const uint8_t* r3 = rows[3] + off;
        const uint8_t* r4 = rows[4] + off;
        const uint8_t* r5 = rows[5] + off;
        const int8_t* wt = w + t * kq * NV * 64;
        for (int64_t q = 0; q < kq; ++q) {
            __m512i wv[NV];
            for (int v = 0; v < NV; ++v) wv[v] = _mm512_loadu_si512(wt + (q * NV + v) * 64);
            __m512i x;
#define QNNB_ROW(R, P)                                                        \
    x = bcast4(P + 4 * q);                                                    \
    for (int v = 0; v < NV; ++v) c[R][v] = _mm512_dpbusd_epi32(c[R][v], x, wv[v]);
            QNNB_ROW(0, r0)
            QNNB_ROW(1, r1)
            QNNB_ROW(2, r2)
            QNNB_ROW(3, r3)
            QNNB_ROW(4, r4)
            QNNB_ROW(5, r5)
#undef QNNB_ROW
        }
    }
    for (int r = 0; r < kVnniRows; ++r)
        for (int v = 0; v < NV; ++v) _mm512_storeu_si512(acc + r * kVnniBlock + v * 16, c[r][v]);
}

// 8 channels per vector: with |total| < 2^31 and mult < 2^31 the product and its rounding term fit
// int64; a total outside int32 goes through requantize_out() itself.
void requant_avx512(const VnniRequant& rq, int64_t c0, int vectors, const int32_t* acc, int rows, int32_t* out) {
    const __m512i zp = _mm512_set1_epi64(rq.zp), qmax = _mm512_set1_epi64(rq.qmax), zero = _mm512_setzero_si512();
    for (int h = 0; h < 2 * vectors; ++h) {  // 8 channels at a time
        const int64_t c = c0 + 8 * h;
        const __m512i comp = _mm512_loadu_si512(rq.comp.data() + c), mult = _mm512_loadu_si512(rq.mult.data() + c);
        const __m512i round = _mm512_loadu_si512(rq.round.data() + c), t = _mm512_loadu_si512(rq.t.data() + c);
        for (int r = 0; r < rows; ++r) {
            __m512i a = _mm512_cvtepi32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + r * kVnniBlock + 8 * h)));
            if (rq.negate) a = _mm512_sub_epi64(zero, a);
            const __m512i total = _mm512_add_epi64(a, comp);
            const __m512i low = _mm512_cvtepi32_epi64(_mm512_cvtepi64_epi32(total));  // total if it fits int32
            const __mmask8 ok = _mm512_cmpeq_epi64_mask(low, total);
            __m512i q = _mm512_srav_epi64(_mm512_add_epi64(_mm512_mul_epi32(total, mult), round), t);
            q = _mm512_min_epi64(_mm512_max_epi64(_mm512_add_epi64(q, zp), zero), qmax);
            int32_t* o = out + r * kVnniBlock + 8 * h;
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(o), _mm512_cvtepi64_epi32(q));
            if (ok != 0xFF) {
                alignas(64) int64_t tv[8];
                _mm512_store_si512(tv, total);
                for (int l = 0; l < 8; ++l)
                    if (!((ok >> l) & 1))
                        o[l] = requantize_out(tv[l], rq.mult32[c + l], rq.shift32[c + l], rq.zp, rq.qmax);
            }
        }
    }
}

}  // namespace
QNNB_AVX512_END
#endif

void vnni_block(const VnniWeights& p, int64_t cb, const uint8_t* const* rows, const int64_t* tap_off, int32_t* acc) {
    const int8_t* w = p.data.data() + cb * p.taps * p.kq * 4 * 64;
    const int nv = p.vectors(cb);
#if QNNB_HAS_AVX512_PATHS
    if (p.avx512) {
        switch (nv) {
            case 1: return block_avx512<1>(w, p.taps, p.kq, rows, tap_off, acc);
            case 2: return block_avx512<2>(w, p.taps, p.kq, rows, tap_off, acc);
            case 3: return block_avx512<3>(w, p.taps, p.kq, rows, tap_off, acc);
            default: return block_avx512<4>(w, p.taps, p.kq, rows, tap_off, acc);
        }
    }
#endif
    switch (nv) {
        case 1: return block_avx2<1>(w, p.taps, p.kq, rows, tap_off, acc);
        case 2: return block_avx2<2>(w, p.taps, p.kq, rows, tap_off, acc);
        case 3: return block_avx2<3>(w, p.taps, p.kq, rows, tap_off, acc);
        default: return block_avx2<4>(w, p.taps, p.kq, rows, tap_off, acc);
    }
}

void vnni_requant(const VnniRequant& rq, int64_t c0, int vectors, const int32_t* acc, int rows, int32_t* out) {
#if QNNB_HAS_AVX512_PATHS
    if (rq.avx512 && !rq.scalar_only) return requant_avx512(rq, c0, vectors, acc, rows, out);
#endif
    requant_scalar(rq, c0, vectors, acc, rows, out);
}

}  // namespace npu
}  // namespace qnnb
#endif
