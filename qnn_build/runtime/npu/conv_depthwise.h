// The npu's depthwise Conv fast path (N15): one input channel per group and one output channel per
// input channel, 8-bit activations, per-channel weights. The direct loops run such a conv one
// output row of one channel at a time, and MobileNet-like models' rows are 2-16 positions long;
// here the channels lie innermost instead, so every loop runs over 64 channels.
#pragma once

#include <cstdint>
#include <vector>

#include "conv_common.h"
#include "conv_geometry.h"

namespace qnnb {
namespace npu {

struct DepthwiseConv {
    ConvGeometry g;
    int64_t pd[3] = {1, 1, 1};    // padded extents (D, H, W)
    int64_t cpad = 0;             // channels padded to whole blocks of 64
    int64_t pix = 0;              // channels padded to whole vectors of 16: a pixel in x_at
    size_t x_at = 0;              // in the node's scratch: [Dp][Hp][Wp][pix] codes, zp_x in the padding
    std::vector<int32_t> w;       // [tap][cpad]
    std::vector<int64_t> tap_off; // per tap, pixels from a window origin
    int32_t zp_x = 0;
    VnniRequant rq;               // bias, multipliers
};

// True when the path applies (with QNNB_NPU_BLOCK for the vector requantization): then `dw` is
// ready and n's scratch holds its staging image. `w` is the weight's integers [channel][tap], pd
// the padded extents.
bool prepare_depthwise(Node& n, const ConvGeometry& g, const int64_t* pd, const ChannelParams& p,
                       const std::vector<int16_t>& w, int32_t wmax, int32_t zp_x, DepthwiseConv& dw);

// y: uint8 codes when y8, else uint16; xs: the node's scratch at x_at.
void run_depthwise(const DepthwiseConv& dw, uint8_t* xs, const uint8_t* x, void* y, bool y8, const ExecContext& ctx);

}  // namespace npu
}  // namespace qnnb
