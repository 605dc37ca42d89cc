// The block kernel of Gemm/MatMul with a 16-bit activation A and constant 8/16-bit weights B (the
// "wide" fast path, docs/npu.md (N15)): int16 rows x of A times int16 weights packed once at prepare,
// summed exactly. On x86-64 `vpmaddwd` (AVX-512 VNNI: `vpdpwssd`, chosen at prepare) multiplies pairs
// of int16 into int32 lanes, which are widened into int64 sums every `flush` pairs, before a lane can
// overflow (the bound is taken from the operands at prepare); elsewhere a plain int64 loop over the
// same packed layout.
//
// A row of 16-bit codes q (zero point zp) becomes int16 rows in one of two ways, so that
// acc = Σ_k (q_k − zp) · w_k is exact:
//  - centred (small weights): x = q − 32768,     acc = S(x) + (32768 − zp) · Σw
//  - split (16-bit weights):  hi = q >> 8, lo = q & 255,  acc = 256 · S(hi) + S(lo) − zp · Σw
// A split row's two halves are two rows of one kernel call, so each weight is loaded once for both.
#pragma once

#include <cstdint>
#include <vector>

#include "conv_common.h"

namespace qnnb {
namespace npu {

constexpr int kWideCols = 32;  // columns per block: 4 vectors of 8 int32 lanes
constexpr int kWideRows = 8;   // rows per kernel call (AVX-512: 16 accumulators, each weight load feeds 8 rows)

struct WideWeights {
    int64_t k = 0, n = 0, pairs = 0, cblocks = 0;  // pairs: K rounded up to 2, halved
    ArrayView<int16_t> data;                       // [cblock][pair][32 columns][2]
    ArrayView<int64_t> colsum;                     // Σ_k w[k][c] per column
    bool split = false;                            // split rows (else centred)
    int64_t flush = 1;                             // pairs an int32 lane holds
    bool avx512 = false;                           // the AVX-512 VNNI kernel (core/isa.h), chosen at prepare
};

// Packs b (int16, element (k, c) at b[k * ldb + c]) into the node's prepared arrays `slot` and
// `slot + 1` and chooses centred or split rows from the largest |w|.
void pack_wide(Node& n, uint32_t slot, const int16_t* b, int64_t ldb, int64_t k, int64_t cols, WideWeights& w);

// Row i of A (16-bit codes at a[i * si + kk * sk]) as its int16 kernel rows: 2 · pairs values each,
// one row (centred) or two (split: hi then lo), zero past K.
void wide_rows(const WideWeights& w, const uint16_t* a, int64_t si, int64_t sk, int64_t i, int16_t* out);

// Column block cb for `count` (1..kWideRows) kernel rows over pairs [p0, p1):
// sums[r][c] += Σ_{k in 2·p0 .. 2·p1} rows[r][k] · w[k][cb·32 + c].
void wide_block(const WideWeights& w, int64_t cb, int64_t p0, int64_t p1, const int16_t* const* rows, int count,
                int64_t* sums);

// The outputs' requantize (N2)-(N3), prepared once: total_c = sign · S_c + comp_c, with S_c the kernel
// rows' sums (split: 256 · hi + lo) and comp_c = sign · offset · Σw_c + bias_c, the same integers as
// sign · wide_acc + bias. With AVX-512 a column block whose shifts t = 31 + shift all lie in [32, 63]
// is requantized 8 columns a vector, exactly (wide_out); any other block column by column (out_fast).
struct WideOut {
    std::vector<int64_t> comp, mult, round, tshift;  // per column; tshift = t − 32
    std::vector<uint8_t> vector_block;               // per column block: the vector form applies
    int32_t zp_a = 0;
};
void prepare_wide_out(const WideWeights& w, const ChannelParams& p, int32_t zp_a, WideOut& o);

// The codes of columns [cb·32, cb·32 + cn) of a row whose first kernel row's sums are `sums`.
void wide_out(const WideWeights& w, const WideOut& o, const ChannelParams& p, int64_t cb, int64_t cn,
              const int64_t* sums, int32_t* q);

// acc of output column `col` (= cb·32 + c) of a row whose first kernel row's sums are `sums`.
inline int64_t wide_acc(const WideWeights& w, const int64_t* sums, int64_t c, int64_t col, int32_t zp) {
    const int64_t s = w.split ? sums[c] * 256 + sums[kWideCols + c] : sums[c];
    const int64_t offset = w.split ? -static_cast<int64_t>(zp) : 32768 - static_cast<int64_t>(zp);
    return s + offset * w.colsum[static_cast<size_t>(col)];
}

}  // namespace npu
}  // namespace qnnb
