// Matrix products in float32 on sgemm: Gemm (transposes, alpha, beta, C broadcast to [M,N]) and
// MatMul (1-D operands, batched with broadcast batch dims). Products with one or two rows of A go
// through a matrix-vector loop instead: sgemm repacks all of B on every call, which costs several
// times the product itself there (batch-1 fully connected layers). A Gemm with a constant B over
// more rows has B packed once at prepare (const_b_product.h).
#include <algorithm>
#include <cstring>

#include "../core/broadcast.h"
#include "../core/gemm.h"
#include "../core/parallel.h"
#include "../core/simd.h"
#include "const_b_product.h"

namespace qnnb {
namespace {

bool require_float(const Node& n, std::string& err) {
    for (const Tensor* t : n.in)
        if (t && t->dtype != QNNB_FLOAT32) {
            err = std::string("tensor '") + t->name + "' has dtype " + dtype_name(t->dtype) + "; expected float32";
            return false;
        }
    if (n.out[0]->dtype != QNNB_FLOAT32) {
        err = "output must be float32";
        return false;
    }
    return true;
}

// ---- Few-row products: Y[r, :] (+)= alpha * A[r, :] * op(B), r < m <= kSmallM ----

constexpr int64_t kSmallM = 2;
constexpr int kLanes = 16;

inline float madd(float a, float b, float c) {
#ifdef __FP_FAST_FMAF
    return __builtin_fmaf(a, b, c);
#else
    return a * b + c;
#endif
}

// Sixteen running sums held as whole registers of the build (one on AVX-512, two on the x86-64
// baseline, four elsewhere): a 16-lane vector type on AVX2 went through memory and made batch-1 fully
// connected layers 2x slower. Sum l is lane l % kF32Lanes of acc[l / kF32Lanes], so the sums and the
// order they are added in are the same on every build.
float dot(const float* a, const float* b, int64_t k) {
    constexpr int64_t kRegs = kLanes / kF32Lanes;
    f32v acc[kRegs] = {};
    int64_t i = 0;
    for (; i + kLanes <= k; i += kLanes)
        for (int64_t q = 0; q < kRegs; ++q) acc[q] += loadv(a + i + q * kF32Lanes) * loadv(b + i + q * kF32Lanes);
    float s = 0.f;
    for (; i < k; ++i) s = madd(a[i], b[i], s);
    for (int l = 0; l < kLanes; ++l) s += acc[l / kF32Lanes][l % kF32Lanes];
    return s;
}

// B stored [N, K]: one dot product per output, each row of B read once for all rows of A.
void few_rows_bt(const float* a, const float* b, float* y, int64_t m, int64_t n, int64_t k, float alpha,
                 bool accumulate, const ExecContext& ctx) {
    constexpr int64_t kCols = 64;
    parallel_for(ctx, (n + kCols - 1) / kCols, [&](int64_t t) {
        const int64_t end = std::min(n, (t + 1) * kCols);
        for (int64_t j = t * kCols; j < end; ++j)
            for (int64_t r = 0; r < m; ++r) {
                const float v = alpha * dot(a + r * k, b + j * k, k);
                y[r * n + j] = accumulate ? y[r * n + j] + v : v;
            }
    });
}

// B stored [K, N]: a block of output columns accumulates rows of B scaled by A's entries.
void few_rows_bn(const float* a, const float* b, float* y, int64_t m, int64_t n, int64_t k, float alpha,
                 bool accumulate, const ExecContext& ctx) {
    constexpr int64_t kCols = 256;
    parallel_for(ctx, (n + kCols - 1) / kCols, [&](int64_t t) {
        const int64_t j0 = t * kCols, w = std::min(kCols, n - j0);
        for (int64_t r = 0; r < m; ++r) {
            float acc[kCols];
            for (int64_t j = 0; j < w; ++j) acc[j] = 0.f;
            const float* ar = a + r * k;
            for (int64_t i = 0; i < k; ++i) {
                const float ai = ar[i];
                const float* brow = b + i * n + j0;
                for (int64_t j = 0; j < w; ++j) acc[j] = madd(ai, brow[j], acc[j]);
            }
            float* yr = y + r * n + j0;
            if (accumulate) {
                for (int64_t j = 0; j < w; ++j) yr[j] += alpha * acc[j];
            } else {
                for (int64_t j = 0; j < w; ++j) yr[j] = alpha * acc[j];
            }
        }
    });
}

// ---- Gemm: Y = alpha * op(A) * op(B) + beta * C ----

struct GemmState {
    bool trans_a = false, trans_b = false;
    float alpha = 1.f, beta = 1.f;
    int64_t m = 0, n = 0, k = 0;
    // How C broadcasts to [M,N]: C[i,j] = c[i * c_row_stride + j * c_col_stride].
    bool has_c = false;
    int64_t c_row_stride = 0, c_col_stride = 0;
    ConstB packed_b;  // constant B with more than kSmallM rows of A: packed once (const_b_product.h)
};

bool prepare_gemm(Node& node, std::string& err) {
    if (!require_float(node, err)) return false;
    const Tensor* a = node.in[0];
    const Tensor* b = node.in[1];
    const Tensor* c = node.input(2);
    if (a->rank() != 2 || b->rank() != 2) {
        err = "A and B must be 2-D";
        return false;
    }
    auto& s = node.make_state<GemmState>();
    s.trans_a = node.params.i("trans_a", 0) != 0;
    s.trans_b = node.params.i("trans_b", 0) != 0;
    s.alpha = node.params.f("alpha", 1.f);
    s.beta = node.params.f("beta", 1.f);
    s.m = s.trans_a ? a->dim(1) : a->dim(0);
    s.k = s.trans_a ? a->dim(0) : a->dim(1);
    s.n = s.trans_b ? b->dim(0) : b->dim(1);
    const int64_t kb = s.trans_b ? b->dim(1) : b->dim(0);
    const Tensor* y = node.out[0];
    if (kb != s.k || y->rank() != 2 || y->dim(0) != s.m || y->dim(1) != s.n) {
        err = "A, B and Y shapes do not fit a [M,K] x [K,N] product";
        return false;
    }
    s.has_c = c != nullptr && s.beta != 0.f;
    if (s.has_c) {
        if (c->rank() > 2) {
            err = "C must have rank <= 2";
            return false;
        }
        const int64_t rows = c->rank() == 2 ? c->dim(0) : 1;
        const int64_t cols = c->rank() >= 1 ? c->dim(c->rank() - 1) : 1;
        if ((rows != 1 && rows != s.m) || (cols != 1 && cols != s.n)) {
            err = "C does not broadcast to [M,N]";
            return false;
        }
        s.c_row_stride = rows == 1 ? 0 : cols;
        s.c_col_stride = cols == 1 ? 0 : 1;
    }
    if (b->is_const() && !s.trans_a && s.m > kSmallM && s.n > 1 && s.k * s.n >= kConstBMinWeights)
        pack_const_b(b->in<float>(), s.k, s.n, s.trans_b, s.packed_b);
    return true;
}

void run_gemm(Node& node, const ExecContext& ctx) {
    GemmState& s = node.state_as<GemmState>();
    const float* a = node.in[0]->in<float>();
    const float* b = node.in[1]->in<float>();
    float* y = node.out[0]->out<float>();
    if (!s.packed_b.panels.empty()) {
        // Y = alpha * A * B, then + beta * C.
        const_b_product(s.packed_b, a, s.m, s.k, y, s.n, ctx);
        const float* c = s.has_c ? node.in[2]->in<float>() : nullptr;
        if (s.alpha == 1.f && !c) return;
        parallel_for(ctx, s.m, [&](int64_t i) {
            float* yrow = y + i * s.n;
            if (s.alpha != 1.f)
                for (int64_t j = 0; j < s.n; ++j) yrow[j] *= s.alpha;
            if (!c) return;
            const float* crow = c + i * s.c_row_stride;
            if (s.c_col_stride == 0) {
                const float v = s.beta * crow[0];
                for (int64_t j = 0; j < s.n; ++j) yrow[j] += v;
            } else {
                for (int64_t j = 0; j < s.n; ++j) yrow[j] += s.beta * crow[j];
            }
        });
        return;
    }
    if (s.has_c) {
        // Y starts as beta * C; sgemm then adds alpha * A * B onto it.
        const float* c = node.in[2]->in<float>();
        const float beta = s.beta;
        parallel_for(ctx, s.m, [&](int64_t i) {
            const float* crow = c + i * s.c_row_stride;
            float* yrow = y + i * s.n;
            if (s.c_col_stride == 0) {
                const float v = beta * crow[0];
                for (int64_t j = 0; j < s.n; ++j) yrow[j] = v;
            } else {
                for (int64_t j = 0; j < s.n; ++j) yrow[j] = beta * crow[j];
            }
        });
    } else if (s.k == 0) {
        std::memset(y, 0, sizeof(float) * static_cast<size_t>(s.m * s.n));
    }
    if (s.k == 0 || s.m == 0 || s.n == 0) return;
    if (s.m <= kSmallM && (!s.trans_a || s.m == 1)) {
        // A's rows are contiguous (a single row is, even when transposed).
        if (s.trans_b) few_rows_bt(a, b, y, s.m, s.n, s.k, s.alpha, s.has_c, ctx);
        else few_rows_bn(a, b, y, s.m, s.n, s.k, s.alpha, s.has_c, ctx);
        return;
    }
    if (s.n == 1 && !s.trans_a) {
        // One column of output: Y^T = B^T A^T, with B's single column contiguous either way.
        few_rows_bt(b, a, y, 1, s.m, s.k, s.alpha, s.has_c, ctx);
        return;
    }
    const int64_t lda = s.trans_a ? s.m : s.k;
    const int64_t ldb = s.trans_b ? s.k : s.n;
    sgemm(s.trans_a, s.trans_b, s.m, s.n, s.k, s.alpha, a, lda, b, ldb, s.has_c ? 1.f : 0.f, y, s.n);
}

// ---- MatMul: numpy.matmul semantics ----

struct MatMulState : MatMulBatches {};

bool prepare_matmul(Node& node, std::string& err) {
    if (!require_float(node, err)) return false;
    return plan_matmul_batches(*node.in[0], *node.in[1], *node.out[0], node.make_state<MatMulState>(), err);
}

void run_matmul(Node& node, const ExecContext& ctx) {
    const MatMulState& s = node.state_as<MatMulState>();
    const float* a = node.in[0]->in<float>();
    const float* b = node.in[1]->in<float>();
    float* y = node.out[0]->out<float>();
    if (s.k == 0) {
        std::memset(y, 0, node.out[0]->nbytes());
        return;
    }
    if (s.m == 0 || s.n == 0) return;
    const int64_t batches = static_cast<int64_t>(s.y_off.size());
    const bool split_batches = ctx.threads > 1 && batches >= ctx.threads;
    ExecContext one_thread;
    one_thread.threads = 1;
    const ExecContext& inner_ctx = split_batches ? one_thread : ctx;
    auto product = [&](int64_t i) {
        if (s.m <= kSmallM) {
            few_rows_bn(a + s.a_off[i], b + s.b_off[i], y + s.y_off[i], s.m, s.n, s.k, 1.f, false, inner_ctx);
        } else if (s.n == 1) {
            few_rows_bt(b + s.b_off[i], a + s.a_off[i], y + s.y_off[i], 1, s.m, s.k, 1.f, false, inner_ctx);
        } else {
            sgemm(false, false, s.m, s.n, s.k, 1.f, a + s.a_off[i], s.k, b + s.b_off[i], s.n, 0.f, y + s.y_off[i],
                  s.n);
        }
    };
    if (split_batches) {
        // Many products: one per thread, each single-threaded.
        gemm_set_threads(1);
        parallel_for(ctx, batches, product);
        gemm_set_threads(ctx.threads);
    } else {
        for (int64_t i = 0; i < batches; ++i) product(i);
    }
}

const Kernel kKernels[] = {
    {"Gemm", prepare_gemm, run_gemm},
    {"MatMul", prepare_matmul, run_matmul},
};

}  // namespace

extern const KernelTable kCpuMatmulKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace qnnb
