// The window geometry shared by the npu's Conv and ConvTranspose (conv.cpp, conv_transpose.cpp):
// spatial dims as 3D (D, H, W) with leading 1s for 1D/2D, and the activation types they run on.
#pragma once

#include <string>

#include "npu.h"

namespace qnnb {
namespace npu {

struct Geometry {
    int64_t batch = 0, in_ch = 0, out_ch = 0, group = 1;
    int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
    int64_t stride[3] = {1, 1, 1}, dil[3] = {1, 1, 1}, pad_lo[3] = {0, 0, 0}, pad_hi[3] = {0, 0, 0};

    int64_t in_plane() const { return in[0] * in[1] * in[2]; }
    int64_t out_plane() const { return out[0] * out[1] * out[2]; }
    int64_t taps() const { return k[0] * k[1] * k[2]; }
    int64_t cg() const { return in_ch / group; }   // input channels per group
    int64_t mg() const { return out_ch / group; }  // output channels per group
};

// A padded image [pd0][pd1][pd2] of `pixel` bytes per position, the input at offset pad_lo (the
// fast paths' staging copy in the node's scratch): sets every byte of every position outside the
// input to `value`, what the padding must read. Run writes the input's positions itself.
void fill_padding(uint8_t* image, const Geometry& g, const int64_t* pd, int64_t pixel, uint8_t value);

// Rank, kernel_shape/strides/dilations/pads, the spatial dims and the group; the weight's channels
// are each op's to check.
bool read_geometry(const Node& n, Geometry& g, std::string& err);

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
