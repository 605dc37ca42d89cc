// The block kernel's form for products of two 8-bit activations (attention's Q·K^T and P·V):
// docs/npu.md (N14), (N15) "vnni, two activations". B is packed for the block kernel once per call
// (it changes every call), as signed bytes B − 128; the zero points and that offset come back as a
// row term and a column term, exactly:
//   Σ (a − zp_a)(b − zp_b) = Σ a·(b − 128) + (128 − zp_b)·Σa − zp_a·Σ(b − 128) − zp_a·K·(128 − zp_b)
// The left side is within the int32 bound (N10) (K ≤ 33,025), so the right side summed in wrapping
// int32 arithmetic is that same number.
#pragma once

#include <cstdint>

#include "../core/broadcast.h"
#include "conv_common.h"

namespace qnnb {
namespace npu {

struct ActProduct {
    // Element strides of one product's operands: A[i][k] at i·a_si + k·a_sk, B[k][j] at k·b_sk + j·b_sj.
    int64_t a_si = 0, a_sk = 1, b_sk = 0, b_sj = 1;
    int32_t zp_a = 0, zp_b = 0;
    VnniWeights shape;        // channels (N), kq, cblocks, isa; data set per product
    VnniRequant rq;           // bias, multipliers, sign
    int64_t kpad = 0;         // bytes of an A row as the kernel reads it
    bool a_in_place = false;  // A's rows contiguous and K a multiple of 4
    size_t pack_bytes = 0;    // one packed B
    size_t packed_at = 0, sums_at = 0, colsum_at = 0, rows_at = 0, row_terms_at = 0;  // in the node's scratch
};

// For MatMul/Gemm with two 8-bit activations and an int32 accumulator: fills `ap` from the
// batches' geometry and the channel parameters, reserves the node's scratch.
void plan_act_product(Node& node, const MatMulBatches& mb, const ChannelParams& p, ActProduct& ap);

// Y (uint8 or uint16 codes) for every product of mb. Only with QNNB_NPU_BLOCK.
template <class TY>
void run_act_product(const Node& node, const MatMulBatches& mb, const ActProduct& ap, const uint8_t* a,
                     const uint8_t* b, TY* y, const ExecContext& ctx);

}  // namespace npu
}  // namespace qnnb
