// The GEMM kernel from OpenBLAS (the scipy-openblas32 wheel): the host's.
#include <cblas.h>

#include "../core/gemm.h"

namespace qnnb {
namespace {

// OpenBLAS's own thread pool is never used: it changes results with the thread count and has
// crashed when resized between calls. Threads come from parallel_for instead (core/gemm.cpp).
void pin_openblas_to_one_thread() {
    static const bool done = [] {
        scipy_openblas_set_num_threads(1);
        return true;
    }();
    (void)done;
}

}  // namespace

void sgemm_kernel(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    pin_openblas_to_one_thread();
    scipy_cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                      static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
                      static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

}  // namespace qnnb
