// Single-precision GEMM for every cpu kernel that needs one (conv, matmul, gemm, rnn), taken from
// OpenBLAS. Row-major: C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C.
#pragma once

#include <cstdint>

namespace qnnb {

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// Threads OpenBLAS may use; set by the graph before each execute.
void gemm_set_threads(int threads);

}  // namespace qnnb
