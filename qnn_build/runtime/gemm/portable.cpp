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
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

#include "../core/gemm.h"

#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

namespace qnnb {
namespace {

#if defined(__AVX512F__)
constexpr int kV = 16;
using vf = float __attribute__((vector_size(64)));
inline vf fmadd(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
inline vf splat(float x) { return _mm512_set1_ps(x); }
constexpr int kMr = 12;
#elif defined(__FMA__)
constexpr int kV = 8;
using vf = float __attribute__((vector_size(32)));
inline vf fmadd(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
inline vf splat(float x) { return _mm256_set1_ps(x); }
constexpr int kMr = 6;
#else
// Without a fused multiply-add (or without AVX): 128-bit vectors, one multiply and one add (the build
// forbids contraction), the same for every element still.
constexpr int kV = 4;
using vf = float __attribute__((vector_size(16)));
inline vf fmadd(vf a, vf b, vf c) { return a * b + c; }
inline vf splat(float x) {
    vf v;
    for (int i = 0; i < kV; ++i) v[i] = x;
    return v;
}
constexpr int kMr = 6;
#endif

constexpr int kNr = 2 * kV;          // columns of a register tile: two vectors
constexpr int64_t kKc = 128;         // K per block: a B tile (kKc x kNr) and an A tile stay in L1
constexpr int64_t kMc = kMr * 16;    // rows of A packed at a time (L2)
constexpr int64_t kNc = kNr * 64;    // columns of B packed at a time (L2/L3)

inline vf load(const float* p) {
    vf v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline void store(float* p, vf v) { std::memcpy(p, &v, sizeof v); }

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

// A[i0:i0+mc, p0:p0+kc] (op(A) row-major view) into tiles of kMr rows: tile[k][r], zero-padded.
void pack_a(bool ta, const float* a, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* out) {
    for (int64_t t = 0; t < mc; t += kMr) {
        const int64_t rows = std::min<int64_t>(kMr, mc - t);
        for (int64_t r = 0; r < kMr; ++r) {
            const int64_t i = i0 + t + r;
            if (r >= rows) {
                for (int64_t k = 0; k < kc; ++k) out[k * kMr + r] = 0.f;
            } else if (ta) {
                for (int64_t k = 0; k < kc; ++k) out[k * kMr + r] = a[(p0 + k) * lda + i];
            } else {
                const float* src = a + i * lda + p0;  // one row of A, read in order
                for (int64_t k = 0; k < kc; ++k) out[k * kMr + r] = src[k];
            }
        }
        out += kc * kMr;
    }
}

// B[p0:p0+kc, j0:j0+nc] (op(B) row-major view) into tiles of kNr columns: tile[k][c], zero-padded.
void pack_b(bool tb, const float* b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* out) {
    for (int64_t t = 0; t < nc; t += kNr) {
        const int64_t cols = std::min<int64_t>(kNr, nc - t);
        if (tb) {  // each column of op(B) is a row of B: read it in order, scatter into the tile
            for (int64_t c = 0; c < cols; ++c) {
                const float* src = b + (j0 + t + c) * ldb + p0;
                for (int64_t k = 0; k < kc; ++k) out[k * kNr + c] = src[k];
            }
            for (int64_t k = 0; k < kc; ++k)
                for (int64_t c = cols; c < kNr; ++c) out[k * kNr + c] = 0.f;
        } else {
            for (int64_t k = 0; k < kc; ++k) {
                float* row = out + k * kNr;
                std::memcpy(row, b + (p0 + k) * ldb + j0 + t, static_cast<size_t>(cols) * sizeof(float));
                for (int64_t c = cols; c < kNr; ++c) row[c] = 0.f;
            }
        }
        out += kc * kNr;
    }
}

// acc[kMr][kNr] = sum over k of a[k][r] * b[k][c], fused multiply-adds in k order.
void micro_kernel(int64_t kc, const float* __restrict a, const float* __restrict b, float* __restrict acc) {
    vf c0[kMr], c1[kMr];
    for (int r = 0; r < kMr; ++r) c0[r] = c1[r] = vf{};
    for (int64_t k = 0; k < kc; ++k) {
        const vf b0 = load(b + k * kNr), b1 = load(b + k * kNr + kV);
        for (int r = 0; r < kMr; ++r) {
            const vf ar = splat(a[k * kMr + r]);
            c0[r] = fmadd(ar, b0, c0[r]);
            c1[r] = fmadd(ar, b1, c1[r]);
        }
    }
    for (int r = 0; r < kMr; ++r) {
        store(acc + r * kNr, c0[r]);
        store(acc + r * kNr + kV, c1[r]);
    }
}

// C tile += (or, for the first K block, = beta * C +) alpha * acc, for its valid rows and columns.
void update_c(const float* acc, int64_t rows, int64_t cols, float alpha, float beta, bool first, float* c,
              int64_t ldc) {
    const bool scale = alpha != 1.f;
    for (int64_t r = 0; r < rows; ++r) {
        float* cr = c + r * ldc;
        const float* t = acc + r * kNr;
        if (cols == kNr) {
            for (int h = 0; h < 2; ++h) {
                vf v = load(t + h * kV);
                if (scale) v = v * alpha;
                if (!first) v = load(cr + h * kV) + v;
                else if (beta != 0.f) v = load(cr + h * kV) * beta + v;
                store(cr + h * kV, v);
            }
            continue;
        }
        for (int64_t j = 0; j < cols; ++j) {
            float v = scale ? t[j] * alpha : t[j];
            if (!first) v = cr[j] + v;
            else if (beta != 0.f) v = cr[j] * beta + v;
            cr[j] = v;
        }
    }
}

}  // namespace

void sgemm_kernel(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {  // C = beta * C (beta == 0 never reads C)
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.f ? 0.f : beta * c[i * ldc + j];
        return;
    }
    thread_local Buffer a_buf, b_buf;
    alignas(64) float acc[kMr * kNr];
    for (int64_t j0 = 0; j0 < n; j0 += kNc) {
        const int64_t nc = std::min(kNc, n - j0);
        const int64_t nc_padded = (nc + kNr - 1) / kNr * kNr;
        for (int64_t p0 = 0; p0 < k; p0 += kKc) {
            const int64_t kc = std::min(kKc, k - p0);
            float* bp = b_buf.get(kKc * kNc);
            pack_b(tb, b, ldb, p0, kc, j0, nc, bp);
            for (int64_t i0 = 0; i0 < m; i0 += kMc) {
                const int64_t mc = std::min(kMc, m - i0);
                float* ap = a_buf.get(kKc * kMc);
                pack_a(ta, a, lda, i0, mc, p0, kc, ap);
                for (int64_t jt = 0; jt < nc_padded; jt += kNr) {
                    const float* bt = bp + (jt / kNr) * kc * kNr;
                    for (int64_t it = 0; it < mc; it += kMr) {
                        micro_kernel(kc, ap + (it / kMr) * kc * kMr, bt, acc);
                        update_c(acc, std::min<int64_t>(kMr, mc - it), std::min<int64_t>(kNr, nc - jt), alpha, beta,
                                 p0 == 0, c + (i0 + it) * ldc + j0 + jt, ldc);
                    }
                }
            }
        }
    }
}

}  // namespace qnnb
