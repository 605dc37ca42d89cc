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
#include "simd.h"

namespace qnnb {
namespace {
namespace base {
using namespace vbase;
constexpr int kMr = 4, kNv = 3;
inline void activate(const Node& n, float* y, int64_t count) { apply_fused(n, y, count); }
#include "packed_gemm_tiles.inc"
}  // namespace base
}  // namespace

#if QNNB_SIMD_V512
QNNB_AVX512_BEGIN
namespace {
namespace avx512 {
using namespace v512;
constexpr int kMr = 8, kNv = 3;
inline void activate(const Node& n, float* y, int64_t count) { apply_fused_avx512(n, y, count); }
#include "packed_gemm_tiles.inc"
}  // namespace avx512
}  // namespace
QNNB_AVX512_END
#endif

// The tiles chosen at pack time are the ones that run: the packed layout depends on kMr.
void pack_a(const float* a, int64_t m, int64_t k, int64_t lda, PackedA& out) {
    out.m = m;
    out.k = k;
    out.wide = QNNB_SIMD_V512 && active_isa() == Isa::kAvx512Vnni;
#if QNNB_SIMD_V512
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
#if QNNB_SIMD_V512
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
