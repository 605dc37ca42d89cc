// What the npu's Conv and ConvTranspose share besides the window geometry (core/window.h): the
// padded staging image, the operands they accept and the activation types they run on.
#pragma once

#include <string>

#include "../core/window.h"
#include "npu.h"

namespace qnnb {
namespace npu {

// A padded image [pd0][pd1][pd2] of `pixel` bytes per position, the input at offset pad_lo (the
// fast paths' staging copy in the node's scratch): sets every byte of every position outside the
// input to `value`, what the padding must read. Run writes the input's positions itself.
void fill_padding(uint8_t* image, const ConvGeometry& g, const int64_t* pd, int64_t pixel, uint8_t value);

// The input and weight both ops accept: an 8/16-bit activation and a constant weight the npu takes.
bool check_operands(const Node& n, std::string& err);

// Calls fn(TX{}, TY{}) for the activation types of x and y (uint8/uint16, checked at prepare).
template <class Fn>
void with_act_types(const Node& n, Fn fn) {
    const bool x8 = n.in[0]->dtype == QNNB_UINT8, y8 = n.out[0]->dtype == QNNB_UINT8;
    if (x8 && y8) fn(uint8_t{}, uint8_t{});
    else if (x8) fn(uint8_t{}, uint16_t{});
    else if (y8) fn(uint16_t{}, uint8_t{});
    else fn(uint16_t{}, uint16_t{});
}

}  // namespace npu
}  // namespace qnnb
