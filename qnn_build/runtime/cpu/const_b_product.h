// Products by a constant right-hand matrix: Y[M, N] = A[M, K] * B[K, N] with B packed once at
// prepare into column panels [N / kPanel][K][kPanel] (zero-padded) and only A, the activations,
// packed per call (core/packed_gemm.h). sgemm packs B on every call, which for a fully connected
// layer over a few rows (ViT's 197 tokens, a recogniser's 20 time steps, an LSTM's input
// projection) reads and writes all of the weights once more than the product itself does.
#pragma once

#include <cstdint>
#include <vector>

#include "../core/packed_gemm.h"

namespace qnnb {

// Weights smaller than this (K * N floats) stay with sgemm: packing them per call costs little, and
// the zoo's micro-models (a few microseconds per node) measured 8-18 % slower on the panels.
constexpr int64_t kConstBMinWeights = int64_t{1} << 16;

struct ConstB {
    int64_t k = 0, n = 0;
    std::vector<float> panels;
    std::vector<int64_t> rows;  // row p of a panel: p * kPanel
    PackedA a;                  // the last call's A
};

// B is [K, N] row-major (ldb = N), or with `transposed` [N, K] row-major (ldb = K).
void pack_const_b(const float* b, int64_t k, int64_t n, bool transposed, ConstB& out);

// Y = A * B; A is [M, K] row-major with rows lda apart, Y's rows are ldy apart. Each panel's
// columns are computed by one thread.
void const_b_product(ConstB& b, const float* a, int64_t m, int64_t lda, float* y, int64_t ldy, const ExecContext& ctx);

}  // namespace qnnb
