// packed_gemm (core/packed_gemm.h): register tiles of kMr rows x kNr columns of C, each summing all
// of K in registers before one store; A's tile is read from its packed copy ([p][kMr]), B's
// columns straight from their rows. The tiles (core/packed_gemm_tiles.inc) are compiled per vector
// width: AVX-512 (8 x 48), AVX2 + FMA (4 x 24), 128 bits elsewhere (4 x 12).
#include "packed_gemm.h"

#include <algorithm>
#include <cstring>

#include "parallel.h"

#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

namespace qnnb {
namespace {

#if defined(__AVX512F__)
namespace wide {
constexpr int kV = 16;
using vf = float __attribute__((vector_size(64)));
inline vf fmadd(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
inline vf splat(float x) { return _mm512_set1_ps(x); }
constexpr int kMr = 8, kNv = 3;
#include "packed_gemm_tiles.inc"
}  // namespace wide
#endif

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

// The variant this process runs: the widest the build has.
#if defined(__AVX512F__)
namespace tiles = wide;
#else
namespace tiles = base;
#endif

}  // namespace

void pack_a(const float* a, int64_t m, int64_t k, int64_t lda, PackedA& out) {
    out.m = m;
    out.k = k;
    out.tiles.resize(static_cast<size_t>((m + tiles::kMr - 1) / tiles::kMr * tiles::kMr * k));
    tiles::pack(a, m, k, lda, out.tiles.data());
}

void packed_gemm(const PackedA& a, const float* b, const int64_t* rows, int64_t n, const Epilogue& epilogue,
                 float* c, int64_t ldc, const ExecContext& ctx) {
    if (a.m <= 0 || n <= 0) return;
    const int64_t column_tiles = (n + tiles::kNr - 1) / tiles::kNr;
    parallel_for(ctx, column_tiles, [&](int64_t jt) { tiles::columns(a, b, rows, n, jt, epilogue, c, ldc); });
}

}  // namespace qnnb
