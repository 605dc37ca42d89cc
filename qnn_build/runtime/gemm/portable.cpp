// A portable GEMM kernel for targets without an OpenBLAS build: rows of C accumulated over K in
// column panels, B's panel packed contiguous so the inner loop is a unit-stride multiply-add the
// compiler vectorizes (NEON, AVX2). Each C element sums its K products in order, on any target.
#include <algorithm>
#include <vector>

#include "../core/gemm.h"

namespace qnnb {
namespace {

constexpr int64_t kPanel = 256;  // columns of C per panel: one row of accumulators stays in L1

}  // namespace

void sgemm_kernel(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    std::vector<float> panel, acc(static_cast<size_t>(std::min(n, kPanel)));
    for (int64_t j0 = 0; j0 < n; j0 += kPanel) {
        const int64_t nj = std::min(kPanel, n - j0);
        // panel[p][j] = op(B)[p][j0 + j]
        panel.resize(static_cast<size_t>(k * nj));
        for (int64_t p = 0; p < k; ++p)
            for (int64_t j = 0; j < nj; ++j)
                panel[p * nj + j] = tb ? b[(j0 + j) * ldb + p] : b[p * ldb + j0 + j];
        for (int64_t i = 0; i < m; ++i) {
            float* __restrict s = acc.data();
            std::fill(s, s + nj, 0.0f);
            for (int64_t p = 0; p < k; ++p) {
                const float x = ta ? a[p * lda + i] : a[i * lda + p];
                const float* __restrict row = panel.data() + p * nj;
                for (int64_t j = 0; j < nj; ++j) s[j] += x * row[j];
            }
            float* ci = c + i * ldc + j0;
            for (int64_t j = 0; j < nj; ++j) ci[j] = beta == 0.0f ? alpha * s[j] : alpha * s[j] + beta * ci[j];
        }
    }
}

}  // namespace qnnb
