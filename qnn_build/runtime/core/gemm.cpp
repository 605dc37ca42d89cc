#include "gemm.h"

#include <algorithm>
#include <vector>

#include "parallel.h"

namespace qnnb {
namespace {

int g_threads = 1;
// Below this many multiply-adds a GEMM runs on one thread: splitting costs more than it saves.
constexpr int64_t kThreadedWork = int64_t{1} << 21;
// Products narrower than this many columns are computed transposed (see sgemm).
constexpr int64_t kFewColumns = 8;

}  // namespace

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    // A few columns and many rows (a convolution over a handful of positions, silero's STFT) would
    // waste most of each register tile, which is many columns wide, on zero padding: computed as
    // C^T = op(B)^T op(A)^T instead and transposed back. Every element is the same chain of
    // multiply-adds over K either way (the kernel is position-invariant), so the bytes are too.
    if (beta == 0.f && n < kFewColumns && m >= 4 * kFewColumns) {
        thread_local std::vector<float> t;
        t.resize(static_cast<size_t>(m * n));
        sgemm(!trans_b, !trans_a, n, m, k, alpha, b, ldb, a, lda, 0.f, t.data(), m);
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = t[static_cast<size_t>(j * m + i)];
        return;
    }
    const int threads = g_threads;
    if (threads <= 1 || m * n * k < kThreadedWork || m < 2 * threads) {
        sgemm_kernel(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    // Rows of C split across threads: every element is computed by the same kernel with the same
    // order over K as on one thread.
    const int64_t rows = (m + threads - 1) / threads;
    ExecContext ctx;
    ctx.threads = threads;
    parallel_for(ctx, threads, [&](int64_t t) {
        const int64_t r0 = t * rows, r1 = std::min(m, r0 + rows);
        if (r0 >= r1) return;
        const float* a_rows = trans_a ? a + r0 : a + r0 * lda;
        sgemm_kernel(trans_a, trans_b, r1 - r0, n, k, alpha, a_rows, lda, b, ldb, beta, c + r0 * ldc, ldc);
    });
}

void gemm_set_threads(int threads) { g_threads = threads; }

}  // namespace qnnb
