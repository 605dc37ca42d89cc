// Products of two 8-bit activations on the block kernel: act_product.h says why it is exact.
#include "act_product.h"

#include <algorithm>

#include "../core/parallel.h"

#if QNNB_NPU_BLOCK
namespace qnnb {
namespace npu {
namespace {

// Wrapping int32 arithmetic: every final sum is within int32 (act_product.h), its parts need not be.
inline int32_t wrap32(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }

constexpr int64_t kRowChunk = 16 * kVnniRows;

// One B [K][N] (strides b_sk, b_sj) as signed bytes B − 128 in the block kernel's layout
// [cblock][kq][vector][16 columns][4 k] (pack_vnni's, one tap), zero beyond K and N, and each
// column's term −zp_a · Σ_k (B − 128), and Σ_k (B − 128) itself (the Arm kernel's colsum: it adds
// back 128 · colsum for its own signed-byte form of A, block_dotprod.cpp).
void pack_b(const ActProduct& ap, int64_t k, const uint8_t* b, int8_t* packed, int32_t* col_terms, int32_t* colsum) {
    const VnniWeights& w = ap.shape;
    const int64_t n = w.channels;
    for (int64_t cb = 0; cb < w.cblocks; ++cb) {
        const int64_t c0 = cb * kVnniBlock, cn = std::min<int64_t>(kVnniBlock, n - c0), width = 16 * w.vectors(cb);
        int8_t* dst = packed + cb * w.kq * 4 * kVnniBlock;
        int32_t sums[kVnniBlock] = {};
        for (int64_t q = 0; q < w.kq; ++q) {
            int8_t* dq = dst + q * width * 4;
            for (int i = 0; i < 4; ++i) {
                const int64_t kk = 4 * q + i;
                int64_t cc = 0;
                if (kk < k) {
                    const uint8_t* row = b + kk * ap.b_sk + c0 * ap.b_sj;
                    for (; cc < cn; ++cc) {
                        const int v = static_cast<int>(row[cc * ap.b_sj]) - 128;
                        dq[cc * 4 + i] = static_cast<int8_t>(v);
                        sums[cc] += v;
                    }
                }
                for (; cc < width; ++cc) dq[cc * 4 + i] = 0;
            }
        }
        for (int64_t cc = 0; cc < kVnniBlock; ++cc) {
            col_terms[c0 + cc] = wrap32(-int64_t{ap.zp_a} * sums[cc]);
            colsum[c0 + cc] = sums[cc];
        }
    }
}

// A's rows of one product as the kernel reads them (K padded with zeros to kpad, unless in place)
// and each row's term (128 − zp_b) · Σa − zp_a · K · (128 − zp_b).
void prepare_rows(const ActProduct& ap, int64_t m, int64_t k, const uint8_t* a, uint8_t* rows, int32_t* row_terms) {
    const int64_t lift = 128 - ap.zp_b, fixed = -int64_t{ap.zp_a} * k * lift;
    for (int64_t i = 0; i < m; ++i) {
        const uint8_t* ai = a + i * ap.a_si;
        int64_t sum = 0;
        if (ap.a_in_place) {
            for (int64_t kk = 0; kk < k; ++kk) sum += ai[kk];
        } else {
            uint8_t* dst = rows + i * ap.kpad;
            for (int64_t kk = 0; kk < k; ++kk) {
                dst[kk] = ai[kk * ap.a_sk];
                sum += dst[kk];
            }
            std::fill(dst + k, dst + ap.kpad, uint8_t{0});  // times zero weights
        }
        row_terms[i] = wrap32(lift * sum + fixed);
    }
}

}  // namespace

void plan_act_product(Node& node, const MatMulBatches& mb, const ChannelParams& p, ActProduct& ap) {
    VnniWeights& w = ap.shape;
    w.channels = mb.n;
    w.taps = 1;
    w.kq = (mb.k + 3) / 4;
    w.cblocks = (mb.n + kVnniBlock - 1) / kVnniBlock;
    w.avx512 = active_isa() == Isa::kAvx512Vnni;
    ap.kpad = w.kq * 4;
    ap.a_in_place = ap.a_sk == 1 && mb.k == ap.kpad;
    ap.pack_bytes = static_cast<size_t>(w.cblocks * w.kq * 4 * kVnniBlock);
    const size_t batches = mb.y_off.size(), columns = static_cast<size_t>(w.cblocks * kVnniBlock);
    ap.packed_at = take_scratch(node, batches * ap.pack_bytes);
    ap.sums_at = take_scratch(node, batches * columns * sizeof(int32_t));
    ap.colsum_at = take_scratch(node, batches * columns * sizeof(int32_t));
    ap.row_terms_at = take_scratch(node, batches * static_cast<size_t>(mb.m) * sizeof(int32_t));
    if (!ap.a_in_place) ap.rows_at = take_scratch(node, batches * static_cast<size_t>(mb.m * ap.kpad));
    prepare_requant(p, 0, p.bias, p.sign < 0, ap.rq);
}

template <class TY>
void run_act_product(const Node& node, const MatMulBatches& mb, const ActProduct& ap, const uint8_t* a,
                     const uint8_t* b, TY* y, const ExecContext& ctx) {
    const int64_t batches = static_cast<int64_t>(mb.y_off.size()), m = mb.m, n = mb.n;
    const int64_t columns = ap.shape.cblocks * kVnniBlock;
    int8_t* packed = scratch_at<int8_t>(node, ap.packed_at);
    int32_t* col_terms = scratch_at<int32_t>(node, ap.sums_at);
    int32_t* colsums = scratch_at<int32_t>(node, ap.colsum_at);
    int32_t* row_terms = scratch_at<int32_t>(node, ap.row_terms_at);
    uint8_t* rows = ap.a_in_place ? nullptr : scratch_at<uint8_t>(node, ap.rows_at);
    parallel_for(ctx, batches, [&](int64_t bt) {
        pack_b(ap, mb.k, b + mb.b_off[bt], packed + bt * ap.pack_bytes, col_terms + bt * columns,
               colsums + bt * columns);
        prepare_rows(ap, m, mb.k, a + mb.a_off[bt], rows ? rows + bt * m * ap.kpad : nullptr, row_terms + bt * m);
    });
    const int64_t chunks = (m + kRowChunk - 1) / kRowChunk, cblocks = ap.shape.cblocks;
    const int64_t tap0 = 0;
    parallel_for(ctx, batches * cblocks * chunks, [&](int64_t task) {
        const int64_t bt = task / (cblocks * chunks), cb = task / chunks % cblocks, i0 = task % chunks * kRowChunk;
        VnniWeights w = ap.shape;
        w.data.ptr = packed + bt * ap.pack_bytes;
        w.colsum.ptr = colsums + bt * columns;
        w.colsum.count = static_cast<size_t>(columns);
        const uint8_t* base = rows ? rows + bt * m * ap.kpad : a + mb.a_off[bt];
        const int64_t stride = rows ? ap.kpad : ap.a_si;
        const int32_t* ct = col_terms + bt * columns + cb * kVnniBlock;
        const int32_t* rt = row_terms + bt * m;
        const int64_t count = std::min(kRowChunk, m - i0);
        const int64_t c0 = cb * kVnniBlock, cn = std::min<int64_t>(kVnniBlock, n - c0);
        const int nv = w.vectors(cb);
        alignas(64) int32_t acc[kVnniRows * kVnniBlock], q[kVnniRows * kVnniBlock];
        for (int64_t r0 = 0; r0 < count; r0 += kVnniRows) {
            const int64_t rn = std::min<int64_t>(kVnniRows, count - r0);
            const uint8_t* rp[kVnniRows];
            for (int r = 0; r < kVnniRows; ++r) rp[r] = base + (i0 + r0 + std::min<int64_t>(r, rn - 1)) * stride;
            vnni_block(w, cb, rp, &tap0, acc);
            for (int64_t r = 0; r < rn; ++r) {
                const uint32_t row = static_cast<uint32_t>(rt[i0 + r0 + r]);
                int32_t* ar = acc + r * kVnniBlock;
                for (int c = 0; c < 16 * nv; ++c)
                    ar[c] = static_cast<int32_t>(static_cast<uint32_t>(ar[c]) + row + static_cast<uint32_t>(ct[c]));
            }
            vnni_requant(ap.rq, c0, nv, acc, static_cast<int>(rn), q);  // (N2)-(N3)
            for (int64_t r = 0; r < rn; ++r) {
                TY* yr = y + mb.y_off[bt] + (i0 + r0 + r) * n + c0;
                for (int64_t c = 0; c < cn; ++c) yr[c] = static_cast<TY>(q[r * kVnniBlock + c]);
            }
        }
    });
}

template void run_act_product<uint8_t>(const Node&, const MatMulBatches&, const ActProduct&, const uint8_t*,
                                       const uint8_t*, uint8_t*, const ExecContext&);
template void run_act_product<uint16_t>(const Node&, const MatMulBatches&, const ActProduct&, const uint8_t*,
                                        const uint8_t*, uint16_t*, const ExecContext&);

}  // namespace npu
}  // namespace qnnb
#endif
