// packed_gemm (core/packed_gemm.h): register tiles of kMr rows x kNr columns of C, each summing all
// of K in registers before one store; A's tile is read from its packed copy ([p][kMr]), B's
// columns straight from their rows. The tiles (core/packed_gemm_tiles.inc) are compiled per vector
// width: AVX2 + FMA (4 x 24), the x86-64 baseline; AVX-512 (8 x 48), taken at run time on a CPU
// that has it (core/isa.h); 128 bits where there is no FMA (4 x 12).
#include "packed_gemm.h"

#include <algorithm>
#include <cstring>

#include "isa.h"
#include "parallel.h"

#if defined(__FMA__)
#include <immintrin.h>
#endif

namespace qnnb {
namespace {

namespace base {
#if defined(__FMA__)
constexpr int kV = 8;
using vf = float __attribute__((vector_size(32)));
inline vf fmadd(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
inline vf splat(float x) { return _mm256_set1_ps(x); }
#else
// Without a fused multiply-add: one multiply and one add (the build forbids contraction).
constexpr int kV = 4;
using vf = float __attribute__((vector_size(16)));
inline vf fmadd(vf a, vf b, vf c) { return a * b + c; }
inline vf splat(float x) { return vf{} + x; }
#endif
constexpr int kMr = 4, kNv = 3;
#include "packed_gemm_tiles.inc"
}  // namespace base

}  // namespace

#if QNNB_HAS_AVX512_PATHS && defined(__FMA__)
QNNB_AVX512_BEGIN
namespace {
namespace avx512 {
constexpr int kV = 16;
using vf = float __attribute__((vector_size(64)));
inline vf fmadd(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
inline vf splat(float x) { return _mm512_set1_ps(x); }
constexpr int kMr = 8, kNv = 3;
#include "packed_gemm_tiles.inc"
}  // namespace avx512
}  // namespace
QNNB_AVX512_END
#define QNNB_PACKED_GEMM_AVX512 1
#else
#define QNNB_PACKED_GEMM_AVX512 0
#endif

// The tiles chosen at pack time are the ones that run: the packed layout depends on kMr.
void pack_a(const float* a, int64_t m, int64_t k, int64_t lda, PackedA& out) {
    out.m = m;
    out.k = k;
    out.wide = QNNB_PACKED_GEMM_AVX512 && active_isa() == Isa::kAvx512Vnni;
#if QNNB_PACKED_GEMM_AVX512
    if (out.wide) {
        out.tiles.resize(static_cast<size_t>((m + avx512::kMr - 1) / avx512::kMr * avx512::kMr * k));
        return avx512::pack(a, m, k, lda, out.tiles.data());
    }
#endif
    out.tiles.resize(static_cast<size_t>((m + base::kMr - 1) / base::kMr * base::kMr * k));
    base::pack(a, m, k, lda, out.tiles.data());
}

void packed_gemm(const PackedA& a, const float* b, const int64_t* rows, int64_t n, const Epilogue& epilogue,
                 float* c, int64_t ldc, const ExecContext& ctx) {
    if (a.m <= 0 || n <= 0) return;
#if QNNB_PACKED_GEMM_AVX512
    if (a.wide) {
        const int64_t column_tiles = (n + avx512::kNr - 1) / avx512::kNr;
        parallel_for(ctx, column_tiles, [&](int64_t jt) { avx512::columns(a, b, rows, n, jt, epilogue, c, ldc); });
        return;
    }
#endif
    const int64_t column_tiles = (n + base::kNr - 1) / base::kNr;
    parallel_for(ctx, column_tiles, [&](int64_t jt) { base::columns(a, b, rows, n, jt, epilogue, c, ldc); });
}

}  // namespace qnnb
