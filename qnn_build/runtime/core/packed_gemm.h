// Products of a layer's weights, packed once at prepare, with a B read where it lies:
//   C[M, N] = A[M, K] * B (+ bias per row of C), row p of B being the N floats at b + rows[p].
// A convolution is one such product without im2col: its row p = (input channel, kernel tap) is the
// channel's padded input plane shifted by the tap, so a register tile of C sums every channel and
// tap before it is stored once (core/packed_gemm.cpp). A 1x1 convolution's rows are the input
// channels' planes. Position-invariant as sgemm is: every element of C is the same chain of fused
// multiply-adds over p in order, whatever its row or column, so equal rows of A (or equal columns of
// B) give equal rows (columns) of C, and the result does not depend on the thread count.
#pragma once

#include <cstdint>
#include <vector>

#include "graph.h"

namespace qnnb {

// A row-major in the kernel's tiles (zero-padded to whole tiles); its layout is the running
// process's (it depends on the vector width chosen at run time), so it is made at prepare and never
// stored. `wide`: packed for the AVX-512 tiles (core/isa.h), which then run it.
struct PackedA {
    int64_t m = 0, k = 0;
    bool wide = false;
    std::vector<float> tiles;
};
void pack_a(const float* a, int64_t m, int64_t k, int64_t lda, PackedA& out);

// Applied to each finished piece of a row of C while it is in cache: + bias[i] on row i, then
// the activation fused into the node `activation` (apply_fused), when given.
struct Epilogue {
    const float* bias = nullptr;
    const Node* activation = nullptr;
};

// Columns a caller's block or panel should come in: a whole number of column tiles at every width
// (3 vectors of 16, 8 or 4 floats), so no tile but the last is cut short.
constexpr int64_t kPackedColumnQuantum = 48;

// C = A * B, then the epilogue. Columns are split over ctx's threads.
void packed_gemm(const PackedA& a, const float* b, const int64_t* rows, int64_t n, const Epilogue& epilogue,
                 float* c, int64_t ldc, const ExecContext& ctx);

}  // namespace qnnb
