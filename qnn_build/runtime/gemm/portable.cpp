// Our GEMM kernel, position-invariant by construction: every element of C, whatever its row or
// column, is computed by the same instructions in the same order. A and B are packed into tiles
// zero-padded to the register tile (MR x NR), so tails run the same vector code as the body; each
// element is a chain of fused multiply-adds over K in order, in blocks of kKc, each block's sum added
// to C. Identical rows of A (or columns of B) therefore give identical rows (columns) of C.
// OpenBLAS does not promise this: its kernels round some tiles differently (a tail, or half of a
// Haswell micro-tile), so equal output channels came out one ulp apart, and a model whose softmax
// amplifies ulps (light_squeezenet: logits near 7e9) was wrong (docs/pipeline.md, "GEMM").
// Loop nest after Goto and van de Geijn: K blocks x N blocks (B packed once per block, in cache) x
// M blocks (A packed) x register tiles.
// The tiles (gemm/tiles.inc) are compiled once per vector width: AVX2 + FMA, the x86-64 baseline,
// and AVX-512, taken at run time on a CPU that has it (core/isa.h); 128-bit vectors where there is
// no FMA. Each element's arithmetic is the same in every variant, so they give the same bytes.
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

#include "../core/gemm.h"
#include "../core/isa.h"
#include "../core/simd.h"

namespace qnnb {
namespace {

// A packing buffer, 64-byte aligned, grown on demand (one per thread).
struct Buffer {
    struct Free {
        void operator()(float* p) const { ::operator delete[](p, std::align_val_t(64)); }
    };
    std::unique_ptr<float[], Free> p;
    int64_t size = 0;
    float* get(int64_t n) {
        if (n > size) {
            p.reset(static_cast<float*>(::operator new[](static_cast<size_t>(n) * sizeof(float), std::align_val_t(64))));
            size = n;
        }
        return p.get();
    }
};

namespace base {
using namespace vbase;
constexpr int kMr = 6;
#include "tiles.inc"
}  // namespace base

}  // namespace

#if QNNB_SIMD_V512
QNNB_AVX512_BEGIN
namespace {
namespace avx512 {
using namespace v512;
constexpr int kMr = 12;
#include "tiles.inc"
}  // namespace avx512
}  // namespace
QNNB_AVX512_END
#endif

void sgemm_kernel(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {  // C = beta * C (beta == 0 never reads C)
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.f ? 0.f : beta * c[i * ldc + j];
        return;
    }
    thread_local Buffer a_buf, b_buf;
#if QNNB_SIMD_V512
    if (active_isa() == Isa::kAvx512Vnni)
        return avx512::sgemm_tiles(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, a_buf, b_buf);
#endif
    base::sgemm_tiles(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, a_buf, b_buf);
}

}  // namespace qnnb
