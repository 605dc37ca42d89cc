// Products by a constant B (const_b_product.h): the panels are whole column tiles of packed_gemm, so a panel is one
// call with B's rows kPanel floats apart.
#include "const_b_product.h"

#include <algorithm>

#include "../core/parallel.h"

namespace qnnb {
namespace {

constexpr int64_t kPanel = kPackedColumnQuantum;  // columns per panel: whole column tiles of packed_gemm

}  // namespace

void pack_const_b(const float* b, int64_t k, int64_t n, bool transposed, ConstB& out) {
    out.k = k;
    out.n = n;
    const int64_t panels = (n + kPanel - 1) / kPanel;
    out.panels.assign(static_cast<size_t>(panels * k * kPanel), 0.f);
    for (int64_t j = 0; j < n; ++j) {
        float* dst = out.panels.data() + ((j / kPanel) * k) * kPanel + j % kPanel;
        for (int64_t p = 0; p < k; ++p) dst[p * kPanel] = transposed ? b[j * k + p] : b[p * n + j];
    }
    out.rows.resize(static_cast<size_t>(k));
    for (int64_t p = 0; p < k; ++p) out.rows[static_cast<size_t>(p)] = p * kPanel;
}

void const_b_product(ConstB& b, const float* a, int64_t m, int64_t lda, float* y, int64_t ldy, const ExecContext& ctx) {
    pack_a(a, m, b.k, lda, b.a);
    ExecContext one_thread;
    one_thread.threads = 1;
    parallel_for(ctx, (b.n + kPanel - 1) / kPanel, [&](int64_t t) {
        const int64_t j0 = t * kPanel;
        packed_gemm(b.a, b.panels.data() + j0 * b.k, b.rows.data(), std::min(kPanel, b.n - j0), Epilogue{}, y + j0,
                    ldy, one_thread);
    });
}

}  // namespace qnnb
