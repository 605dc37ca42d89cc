// The block kernel of the fast paths (N15) on Arm's dot-product extension. vdotq_s32 multiplies
// signed bytes, so each activation byte x (unsigned) enters as x - 128 (x ^ 0x80) and 128 · colsum[c]
// is added back: sum x·w = sum (x − 128)·w + 128 · sum w, the same int32 sums as the VNNI kernel
// (exact: every partial sum is bounded by the (N10) check that chose this path).
#include "conv_common.h"

#if defined(__ARM_FEATURE_DOTPROD)
#include <arm_neon.h>

#include <cstring>

namespace qnnb {
namespace npu {
namespace {

// One row at a time: NV · 4 accumulators of 4 channels each stay in registers.
template <int NV>
void block_kernel(const int8_t* w, int64_t taps, int64_t kq, const uint8_t* const* rows, const int64_t* tap_off,
                  const int32_t* colsum, int32_t* acc) {
    const int8x16_t flip = vdupq_n_s8(-128);
    for (int r = 0; r < kVnniRows; ++r) {
        int32x4_t c[NV * 4];
        for (int j = 0; j < NV * 4; ++j) c[j] = vdupq_n_s32(0);
        for (int64_t t = 0; t < taps; ++t) {
            const uint8_t* x = rows[r] + tap_off[t];
            const int8_t* wt = w + t * kq * NV * 64;
            for (int64_t q = 0; q < kq; ++q) {
                uint32_t x4;
                std::memcpy(&x4, x + 4 * q, 4);
                const int8x16_t xs = veorq_s8(vreinterpretq_s8_u32(vdupq_n_u32(x4)), flip);
                const int8_t* wq = wt + q * NV * 64;  // [vector][16 channels][4]: 4 channels per 16 bytes
                for (int j = 0; j < NV * 4; ++j) c[j] = vdotq_s32(c[j], vld1q_s8(wq + 16 * j), xs);
            }
        }
        for (int j = 0; j < NV * 4; ++j)
            vst1q_s32(acc + r * kVnniBlock + 4 * j, vaddq_s32(c[j], vshlq_n_s32(vld1q_s32(colsum + 4 * j), 7)));
    }
}

}  // namespace

void vnni_block(const VnniWeights& p, int64_t cb, const uint8_t* const* rows, const int64_t* tap_off, int32_t* acc) {
    const int8_t* w = p.data.data() + cb * p.taps * p.kq * 4 * 64;
    const int32_t* colsum = p.colsum.data() + cb * kVnniBlock;
    switch (p.vectors(cb)) {
        case 1: block_kernel<1>(w, p.taps, p.kq, rows, tap_off, colsum, acc); break;
        case 2: block_kernel<2>(w, p.taps, p.kq, rows, tap_off, colsum, acc); break;
        case 3: block_kernel<3>(w, p.taps, p.kq, rows, tap_off, colsum, acc); break;
        default: block_kernel<4>(w, p.taps, p.kq, rows, tap_off, colsum, acc); break;
    }
}

// (N2)-(N3) per element through requantize_out() itself: the reference rule, no vector rewrite.
void vnni_requant(const VnniRequant& rq, int64_t c0, int vectors, const int32_t* acc, int rows, int32_t* out) {
    for (int r = 0; r < rows; ++r)
        for (int i = 0; i < 16 * vectors; ++i) {
            const int64_t a = acc[r * kVnniBlock + i];
            out[r * kVnniBlock + i] = requantize_out((rq.negate ? -a : a) + rq.comp[c0 + i], rq.mult32[c0 + i],
                                                     rq.shift32[c0 + i], rq.zp, rq.qmax);
        }
}

}  // namespace npu
}  // namespace qnnb
#endif
