// Single-precision GEMM for every cpu kernel that needs one (conv, matmul, gemm, rnn).
// Row-major: C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C. core/gemm.cpp splits rows over
// threads; the one-thread kernel comes from the file the target names: gemm/openblas.cpp (the
// host) or gemm/portable.cpp (targets without an OpenBLAS build).
#pragma once

#include <cstdint>

namespace qnnb {

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// Threads a GEMM may use; set by the graph before each execute.
void gemm_set_threads(int threads);

// The one-thread kernel (gemm/<name>.cpp). beta == 0 never reads C.
void sgemm_kernel(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace qnnb
