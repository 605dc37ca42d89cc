// Integer Gemm and MatMul: docs/npu.md (N13), (N14), fast paths (N15).
//
// Y[b][i][n] for output column (channel) n:
//   acc_j = sum over k of block j (all K when not block-wise) of (A[b][i][k] − zp_A) · (B[b][k][n] − zp_B)
//   total = sign · sum_j block_mult[n][j] · acc_j + bias[n];  q_y = clamp(requantize(total) + zp_y)
// A is an activation (or a constant parameter), B a constant weight (per-channel along N, per
// tensor, or block-wise along K; zp_B = 0) or a second activation (attention). Several ways to
// compute it, all giving the same bytes:
//  - product_ref: the plain loops (QNNB_NPU_REFERENCE=1 at prepare selects it);
//  - vnni (8-bit activation A x 8/4-bit per-channel constant B, one B matrix): B packed once at
//    prepare for _mm512_dpbusd_epi32, rows of A read in place (or copied to a K-padded buffer);
//  - act_vnni (two 8-bit activations, attention): B packed per call for the same block kernel
//    (act_product.h);
//  - wide (16-bit activation A x 8/16-bit per-channel constant B, one B matrix): B packed once at
//    prepare for the int16 block kernel of product16.h, rows of A converted per run;
//  - rows (everything else whose B is contiguous along N): per row of A, vectorisable
//    multiply-accumulate of whole rows of B.
#include <algorithm>
#include <cstring>
#include <vector>

#include "../core/broadcast.h"
#include "../core/parallel.h"
#include "act_product.h"
#include "conv_common.h"
#include "product16.h"

namespace qnnb {
namespace npu {
namespace {

enum class Path { Reference, Rows, Vnni, ActVnni, Wide };
enum class Kind { U8, U16, I16 };  // an operand's element type (constants unpacked to int16)

struct ProductState : MatMulBatches {  // Gemm sets m, k, n and one product itself
    int64_t a_si = 0, a_sk = 1, b_sk = 0, b_sj = 1;
    Kind a_kind = Kind::U8, b_kind = Kind::I16;
    std::vector<int16_t> a_const, b_const;     // constant operands' integers (B as [.., K, N])
    int32_t zp_a = 0, zp_b = 0;
    ChannelParams p;
    int64_t block = 0;                         // K per block (K when not block-wise)
    bool acc32 = true;
    Path path = Path::Reference;
    // vnni
    VnniWeights vw;
    VnniRequant rq;                            // bias − sign · zp_A · sum(w), multipliers
    int64_t kpad = 0;                          // bytes per row of A as the kernel reads it
    bool a_in_place = false;
    size_t a_rows_at = 0;                      // in the node's scratch: A as [rows][kpad] when not in place
    ActProduct act;                            // act_vnni
    // wide
    WideWeights ww;
    WideOut wo;                                // its outputs' requantize
    size_t wide_rows_at = 0;                   // in the node's scratch: A's kernel rows
};

Kind kind_of(const Tensor& t) {
    if (t.is_const()) return Kind::I16;
    return t.dtype == QNNB_UINT8 ? Kind::U8 : Kind::U16;
}

// An operand: an 8/16-bit activation, or a constant integer parameter (unpacked to int16).
bool read_operand(const Tensor* t, std::vector<int16_t>& unpacked, int64_t& max_abs, std::string& err) {
    if (!t || !t->encoding.present() || t->encoding.kind != QNNB_ENCODING_INT) {
        err = "operand '" + (t ? t->name : std::string("?")) + "' is not an integer tensor with an encoding";
        return false;
    }
    if (t->is_const()) {
        int32_t wmax = 0;
        if (!unpack_weight(t, unpacked, wmax, err)) return false;
        max_abs = wmax;
        return true;
    }
    if (t->dtype != QNNB_UINT8 && t->dtype != QNNB_UINT16) {
        err = "operand '" + t->name + "' must be an 8- or 16-bit activation or a constant";
        return false;
    }
    if (t->encoding.scales.size() != 1) {
        err = "activation '" + t->name + "' must have a per-tensor encoding";
        return false;
    }
    max_abs = operand_max(*t);
    return true;
}

template <class T>
const T* operand_ptr(const Tensor* t, const std::vector<int16_t>& unpacked) {
    if (t->is_const()) return reinterpret_cast<const T*>(unpacked.data());
    return t->in<T>();
}

template <class Fn>
void with_kind(Kind kind, Fn fn) {
    switch (kind) {
        case Kind::U8: fn(uint8_t{}); break;
        case Kind::U16: fn(uint16_t{}); break;
        default: fn(int16_t{}); break;
    }
}

// ---- reference: the equation's loops ------------------------------------------------------------

template <class TA, class XA, class XB, class TY>
void product_ref(const ProductState& s, const XA* a, const XB* b, TY* y, const ExecContext& ctx) {
    const int64_t batches = static_cast<int64_t>(s.y_off.size());
    parallel_for(ctx, batches * s.m, [&](int64_t task) {
        const int64_t bt = task / s.m, i = task % s.m;
        const XA* ai = a + s.a_off[bt] + i * s.a_si;
        const XB* bb = b + s.b_off[bt];
        TY* yi = y + s.y_off[bt] + i * s.n;
        for (int64_t j = 0; j < s.n; ++j) {
            int64_t total = 0;
            for (int64_t blk = 0; blk < s.k / s.block; ++blk) {
                TA acc = 0;  // (N10): |acc| < 2^31 when TA is int32
                for (int64_t kk = blk * s.block; kk < (blk + 1) * s.block; ++kk)
                    acc += (static_cast<TA>(ai[kk * s.a_sk]) - s.zp_a) * (static_cast<TA>(bb[kk * s.b_sk + j * s.b_sj]) - s.zp_b);
                total += static_cast<int64_t>(acc) * s.p.block_mult[j * s.p.blocks + blk];  // (N11)
            }
            yi[j] = static_cast<TY>(s.p.out(j, s.p.sign * total + s.p.bias[j]));
        }
    });
}

// ---- rows: B contiguous along N ------------------------------------------------------------------

constexpr int64_t kCols = 256;

template <class TA, class XA, class XB, class TY>
void product_rows(const ProductState& s, const XA* a, const XB* b, TY* y, const ExecContext& ctx) {
    const int64_t batches = static_cast<int64_t>(s.y_off.size());
    const int64_t col_chunks = (s.n + kCols - 1) / kCols;
    parallel_for(ctx, batches * s.m * col_chunks, [&](int64_t task) {
        const int64_t row = task / col_chunks, j0 = (task % col_chunks) * kCols;
        const int64_t bt = row / s.m, i = row % s.m, len = std::min(kCols, s.n - j0);
        const XA* ai = a + s.a_off[bt] + i * s.a_si;
        const XB* bb = b + s.b_off[bt] + j0;
        int64_t total[kCols];
        TA acc[kCols];
        for (int64_t j = 0; j < len; ++j) total[j] = 0;
        for (int64_t blk = 0; blk < s.k / s.block; ++blk) {
            for (int64_t j = 0; j < len; ++j) acc[j] = 0;
            for (int64_t kk = blk * s.block; kk < (blk + 1) * s.block; ++kk) {
                const TA av = static_cast<TA>(ai[kk * s.a_sk]) - s.zp_a;
                if (av == 0) continue;
                const XB* brow = bb + kk * s.b_sk;
                for (int64_t j = 0; j < len; ++j) acc[j] += av * (static_cast<TA>(brow[j]) - s.zp_b);
            }
            if (s.p.blockwise()) {
                for (int64_t j = 0; j < len; ++j) total[j] += static_cast<int64_t>(acc[j]) * s.p.block_mult[(j0 + j) * s.p.blocks + blk];
            } else {
                for (int64_t j = 0; j < len; ++j) total[j] += acc[j];
            }
        }
        TY* yi = y + s.y_off[bt] + i * s.n + j0;
        for (int64_t j = 0; j < len; ++j) yi[j] = static_cast<TY>(s.p.out_fast(j0 + j, s.p.sign * total[j] + s.p.bias[j0 + j]));
    });
}

// ---- vnni -----------------------------------------------------------------------------------------

constexpr int64_t kRowChunk = 16 * kVnniRows;

template <class TY>
void product_vnni(const Node& node, const ProductState& s, const uint8_t* a, TY* y, const ExecContext& ctx) {
    const int64_t rows = s.m;  // one B matrix: A's batches are merged into M
    const uint8_t* base = a;
    int64_t stride = s.a_si;
    if (!s.a_in_place) {
        uint8_t* a_rows = scratch_at<uint8_t>(node, s.a_rows_at);
        parallel_for(ctx, rows, [&](int64_t i) {
            uint8_t* dst = a_rows + i * s.kpad;
            for (int64_t kk = 0; kk < s.k; ++kk) dst[kk] = a[i * s.a_si + kk * s.a_sk];
            std::fill(dst + s.k, dst + s.kpad, uint8_t{0});  // times zero weights
        });
        base = a_rows;
        stride = s.kpad;
    }
    const int64_t chunks = (rows + kRowChunk - 1) / kRowChunk;
    const int64_t tap0 = 0;
    parallel_for(ctx, s.vw.cblocks * chunks, [&](int64_t task) {
        const int64_t cb = task / chunks, i0 = (task % chunks) * kRowChunk;
        const int64_t count = std::min(kRowChunk, rows - i0);
        const int64_t c0 = cb * kVnniBlock, cn = std::min<int64_t>(kVnniBlock, s.n - c0);
        alignas(64) int32_t acc[kVnniRows * kVnniBlock], q[kVnniRows * kVnniBlock];
        for (int64_t r0 = 0; r0 < count; r0 += kVnniRows) {
            const int64_t rn = std::min<int64_t>(kVnniRows, count - r0);
            const uint8_t* rp[kVnniRows];
            for (int r = 0; r < kVnniRows; ++r) rp[r] = base + (i0 + r0 + std::min<int64_t>(r, rn - 1)) * stride;
            vnni_block(s.vw, cb, rp, &tap0, acc);
            vnni_requant(s.rq, c0, s.vw.vectors(cb), acc, static_cast<int>(rn), q);  // (N2)-(N3)
            for (int64_t r = 0; r < rn; ++r) {
                TY* yr = y + (i0 + r0 + r) * s.n + c0;
                for (int64_t c = 0; c < cn; ++c) yr[c] = static_cast<TY>(q[r * kVnniBlock + c]);
            }
        }
    });
}

// ---- wide: 16-bit A x constant B ---------------------------------------------------------------------

constexpr int64_t kWideRowChunk = 32;   // rows of A per task: each reads its column block of B once
constexpr int64_t kWidePairChunk = 256; // pairs of K per pass over the task's rows (32 KB of B, in L1)

template <class TY>
void product_wide(const Node& node, const ProductState& s, const uint16_t* a, TY* y, const ExecContext& ctx) {
    const WideWeights& w = s.ww;
    const int per_row = w.split ? 2 : 1;  // kernel rows per row of A
    const int64_t len = 2 * w.pairs;
    int16_t* x = scratch_at<int16_t>(node, s.wide_rows_at);
    parallel_for(ctx, s.m, [&](int64_t i) { wide_rows(w, a, s.a_si, s.a_sk, i, x + i * per_row * len); });
    const int64_t chunks = (s.m + kWideRowChunk - 1) / kWideRowChunk;
    parallel_for(ctx, w.cblocks * chunks, [&](int64_t task) {
        const int64_t cb = task / chunks, i0 = (task % chunks) * kWideRowChunk;
        const int64_t kernel_rows = (std::min(s.m, i0 + kWideRowChunk) - i0) * per_row;
        const int64_t c0 = cb * kWideCols, cn = std::min<int64_t>(kWideCols, s.n - c0);
        alignas(32) int64_t sums[2 * kWideRowChunk * kWideCols];
        std::fill(sums, sums + kernel_rows * kWideCols, int64_t{0});  // only the rows this task sums
        const int16_t* x0 = x + i0 * per_row * len;
        for (int64_t p0 = 0; p0 < w.pairs; p0 += kWidePairChunk) {
            const int64_t p1 = std::min(w.pairs, p0 + kWidePairChunk);
            for (int64_t r = 0; r < kernel_rows; r += kWideRows) {
                const int count = static_cast<int>(std::min<int64_t>(kWideRows, kernel_rows - r));
                const int16_t* rows[kWideRows];
                for (int j = 0; j < kWideRows; ++j) rows[j] = x0 + (r + std::min(j, count - 1)) * len;
                wide_block(w, cb, p0, p1, rows, count, sums + r * kWideCols);
            }
        }
        for (int64_t r = 0; r < kernel_rows / per_row; ++r) {
            TY* yr = y + (i0 + r) * s.n + c0;
            int32_t q[kWideCols];
            wide_out(w, s.wo, s.p, cb, cn, sums + r * per_row * kWideCols, q);  // (N2)-(N3)
            for (int64_t c = 0; c < cn; ++c) yr[c] = static_cast<TY>(q[c]);
        }
    });
}

// ---- prepare ----------------------------------------------------------------------------------------

// Everything after the shapes: operands, channel parameters, bounds, the path.
bool finish_prepare(Node& node, ProductState& s, int weight_k_axis, std::string& err) {
    const Tensor* a = node.in[0];
    const Tensor* b = node.in[1];
    if (!check_int_output(node.output(0), err)) return false;
    int64_t a_max = 0, b_max = 0;
    std::vector<int16_t> unused;
    if (!read_operand(a, s.a_const, a_max, err)) return false;
    if (!b->is_const() && !read_operand(b, unused, b_max, err)) return false;
    if (b->is_const()) b_max = operand_max(*b);
    const int a_bits = a->encoding.bitwidth;
    if (b->is_const() && b->encoding.bitwidth == 16 && a_bits <= 8) {
        err = "16-bit weights with 8-bit activations are not supported by the npu (use w16a16, w8a8 or w8a16)";
        return false;
    }
    s.a_kind = kind_of(*a);
    s.b_kind = kind_of(*b);
    s.zp_a = zero_point(*a);
    s.zp_b = b->is_const() ? 0 : zero_point(*b);
    if (b->is_const() && b->encoding.block_axis >= 0 && b->encoding.block_axis != weight_k_axis) {
        err = "a block-wise weight must be blocked along K";
        return false;
    }
    if (!read_channel_params(node, s.n, b, node.input(2), s.p, err)) return false;
    s.block = s.p.blockwise() ? s.p.block_size : s.k;
    if (s.block <= 0) s.block = 1;
    if (s.k % s.block) {
        err = "block size does not divide K";
        return false;
    }
    if (!check_total_bound(s.p, a_max, b_max, s.k, err)) return false;
    s.acc32 = fits_int32(a_max, b_max, s.block);
    const bool one_b = s.b_off.size() == 1;
    const bool vnni = QNNB_NPU_BLOCK && s.a_kind == Kind::U8 && b->is_const() && b->encoding.bitwidth <= 8 &&
                      !s.p.blockwise() && one_b && s.b_sj == 1 && fits_int32(255, 128, s.k) && s.k > 0;
    const bool act_vnni = QNNB_NPU_BLOCK && s.a_kind == Kind::U8 && s.b_kind == Kind::U8 && !s.p.blockwise() &&
                          s.p.sign != 0 && fits_int32(255, 255, s.k) && s.k > 0;
    if (force_reference() || s.k == 0) {
        s.path = Path::Reference;
    } else if (vnni) {
        s.path = Path::Vnni;
        const int16_t* w = s.b_const.data();
        const int64_t ldb = s.b_sk;
        pack_vnni(node, 0, s.n, 1, s.k, [&](int64_t c, int64_t, int64_t kk) { return w[kk * ldb + c]; }, s.vw);
        std::vector<int64_t> comp(static_cast<size_t>(s.n));
        for (int64_t c = 0; c < s.n; ++c) comp[c] = s.p.bias[c] - s.p.sign * static_cast<int64_t>(s.zp_a) * s.vw.colsum[c];
        if (s.p.sign == 0) s.path = Path::Rows;  // alpha = 0: no product at all
        prepare_requant(s.p, 0, comp, s.p.sign < 0, s.rq);
        s.kpad = s.vw.kq * 4;
        s.a_in_place = s.a_sk == 1 && s.k == s.kpad;
        if (!s.a_in_place) s.a_rows_at = take_scratch(node, static_cast<size_t>(s.m * s.kpad));
    } else if (act_vnni) {
        s.path = Path::ActVnni;
        s.act.a_si = s.a_si;
        s.act.a_sk = s.a_sk;
        s.act.b_sk = s.b_sk;
        s.act.b_sj = s.b_sj;
        s.act.zp_a = s.zp_a;
        s.act.zp_b = s.zp_b;
        plan_act_product(node, s, s.p, s.act);
    } else if (s.a_kind == Kind::U16 && b->is_const() && !s.p.blockwise() && one_b && s.b_sj == 1) {
        s.path = Path::Wide;
        pack_wide(node, 2, s.b_const.data(), s.b_sk, s.k, s.n, s.ww);
        prepare_wide_out(s.ww, s.p, s.zp_a, s.wo);
        s.b_const = {};  // the packed copy is all the wide path reads
        const int64_t per_row = s.ww.split ? 2 : 1;
        s.wide_rows_at = take_scratch(node, static_cast<size_t>(s.m * per_row * 2 * s.ww.pairs) * sizeof(int16_t));
    } else if (s.b_sj == 1) {
        s.path = Path::Rows;
    } else {
        s.path = Path::Reference;
    }
    return true;
}

// Gemm: Y = alpha · op(A) · op(B) + beta · C, alpha and beta folded at convert time (N13).
bool prepare_gemm(Node& node, std::string& err) {
    const Tensor* a = node.input(0);
    const Tensor* b = node.input(1);
    if (!a || !b || a->rank() != 2 || b->rank() != 2) {
        err = "A and B must be 2-D";
        return false;
    }
    auto& s = node.make_state<ProductState>();
    const bool ta = node.params.i("trans_a", 0) != 0, tb = node.params.i("trans_b", 0) != 0;
    s.m = ta ? a->dim(1) : a->dim(0);
    s.k = ta ? a->dim(0) : a->dim(1);
    s.n = tb ? b->dim(0) : b->dim(1);
    const Tensor* y = node.out[0];
    if ((tb ? b->dim(1) : b->dim(0)) != s.k || y->rank() != 2 || y->dim(0) != s.m || y->dim(1) != s.n) {
        err = "A, B and Y shapes do not fit a [M,K] x [K,N] product";
        return false;
    }
    s.a_off = s.b_off = s.y_off = {0};
    s.a_si = ta ? 1 : s.k;
    s.a_sk = ta ? s.m : 1;
    if (b->is_const()) {
        std::vector<int16_t> raw;
        int32_t wmax = 0;
        if (!unpack_weight(b, raw, wmax, err)) return false;
        s.b_const.resize(raw.size());
        for (int64_t kk = 0; kk < s.k; ++kk)  // stored as [K][N] whatever trans_b
            for (int64_t j = 0; j < s.n; ++j) s.b_const[kk * s.n + j] = raw[tb ? j * s.k + kk : kk * s.n + j];
        s.b_sk = s.n;
        s.b_sj = 1;
    } else {
        s.b_sk = tb ? 1 : s.n;
        s.b_sj = tb ? s.k : 1;
    }
    return finish_prepare(node, s, tb ? 1 : 0, err);
}

// MatMul: numpy.matmul semantics (N14).
bool prepare_matmul(Node& node, std::string& err) {
    const Tensor* a = node.input(0);
    const Tensor* b = node.input(1);
    if (!a || !b) {
        err = "MatMul needs two operands";
        return false;
    }
    auto& s = node.make_state<ProductState>();
    if (!plan_matmul_batches(*a, *b, *node.out[0], s, err)) return false;
    s.a_si = s.k;
    s.a_sk = 1;
    s.b_sk = s.n;
    s.b_sj = 1;
    if (b->is_const()) {
        int32_t wmax = 0;
        if (!unpack_weight(b, s.b_const, wmax, err)) return false;
    }
    return finish_prepare(node, s, b->rank() >= 2 ? b->rank() - 2 : 0, err);
}

void run_product(Node& node, const ExecContext& ctx) {
    ProductState& s = node.state_as<ProductState>();
    const bool y8 = node.out[0]->dtype == QNNB_UINT8;
    auto dispatch = [&](auto ty) {
        using TY = decltype(ty);
        TY* y = node.out[0]->out<TY>();
        if (s.path == Path::Vnni) {
            product_vnni<TY>(node, s, node.in[0]->in<uint8_t>(), y, ctx);
            return;
        }
#if QNNB_NPU_BLOCK
        if (s.path == Path::ActVnni) {
            run_act_product<TY>(node, s, s.act, node.in[0]->in<uint8_t>(), node.in[1]->in<uint8_t>(), y, ctx);
            return;
        }
#endif
        if (s.path == Path::Wide) {
            product_wide<TY>(node, s, node.in[0]->in<uint16_t>(), y, ctx);
            return;
        }
        with_kind(s.a_kind, [&](auto xa) {
            with_kind(s.b_kind, [&](auto xb) {
                using XA = decltype(xa);
                using XB = decltype(xb);
                const XA* a = operand_ptr<XA>(node.in[0], s.a_const);
                const XB* b = node.in[1]->is_const() ? reinterpret_cast<const XB*>(s.b_const.data()) : node.in[1]->in<XB>();
                if (s.path == Path::Rows) {
                    if (s.acc32) product_rows<int32_t>(s, a, b, y, ctx);
                    else product_rows<int64_t>(s, a, b, y, ctx);
                } else {
                    if (s.acc32) product_ref<int32_t>(s, a, b, y, ctx);
                    else product_ref<int64_t>(s, a, b, y, ctx);
                }
            });
        });
    };
    if (y8) dispatch(uint8_t{});
    else dispatch(uint16_t{});
}

const Kernel kKernels[] = {
    {"Gemm", prepare_gemm, run_product},
    {"MatMul", prepare_matmul, run_product},
};

}  // namespace

extern const KernelTable kNpuMatmulKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace npu
}  // namespace qnnb
