// code_table.h's byte lookup on x86-64 with AVX-512 VBMI: 64 codes per step, two vpermi2b over the
// table's halves and a blend on each code's top bit. Taken at run time where the CPU has VBMI
// (core/isa.h); the same bytes as the loop (the table's entries truncated to bytes, as it stores them).
#include "code_table.h"

#include "../core/isa.h"

#if QNNB_HAS_AVX512_PATHS
#include <immintrin.h>

namespace qnnb {
namespace npu {
namespace {

// The names say avx512: tests/test_targets_portable.py finds AVX-512 instructions only in such functions.
#define QNNB_VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi")))

// Bits 0-6 of each code index a half of the table (bit 6 picks its upper register), bit 7 the half.
QNNB_VBMI inline __m512i look_avx512(const __m512i* t, __m512i q) {
    const __m512i lo = _mm512_permutex2var_epi8(t[0], q, t[1]), hi = _mm512_permutex2var_epi8(t[2], q, t[3]);
    return _mm512_mask_blend_epi8(_mm512_movepi8_mask(q), lo, hi);
}

QNNB_VBMI void lookup_avx512_vbmi(const uint8_t* x, uint8_t* y, const int32_t* table, int64_t n) {
    alignas(64) uint8_t bytes[256];
    for (int i = 0; i < 16; ++i)
        _mm_store_si128(reinterpret_cast<__m128i*>(bytes + 16 * i), _mm512_cvtepi32_epi8(_mm512_loadu_si512(table + 16 * i)));
    __m512i t[4];
    for (int h = 0; h < 4; ++h) t[h] = _mm512_load_si512(bytes + 64 * h);
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) _mm512_storeu_si512(y + i, look_avx512(t, _mm512_loadu_si512(x + i)));
    if (i < n) {
        const __mmask64 tail = _bzhi_u64(~uint64_t{0}, static_cast<unsigned>(n - i));
        _mm512_mask_storeu_epi8(y + i, tail, look_avx512(t, _mm512_maskz_loadu_epi8(tail, x + i)));
    }
}

}  // namespace

bool fast_byte_lookup() { return active_avx512_vbmi(); }

void lookup_bytes(const uint8_t* x, uint8_t* y, const int32_t* table, int64_t n, bool fast) {
    if (fast) return lookup_avx512_vbmi(x, y, table, n);
    lookup(x, y, table, n);
}

}  // namespace npu
}  // namespace qnnb

#else

namespace qnnb {
namespace npu {

bool fast_byte_lookup() { return false; }

void lookup_bytes(const uint8_t* x, uint8_t* y, const int32_t* table, int64_t n, bool) { lookup(x, y, table, n); }

}  // namespace npu
}  // namespace qnnb

#endif
