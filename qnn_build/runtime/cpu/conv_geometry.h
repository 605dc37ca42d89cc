// The window geometry of Conv and ConvTranspose on the cpu: spatial dims as 3D (D, H, W) with
// leading 1s for 1D/2D, read from the node's io shapes and its normalised parameters.
#pragma once

#include <string>

#include "../core/graph.h"

namespace qnnb {

struct ConvGeometry {
    int64_t batch = 0, in_ch = 0, out_ch = 0, group = 1;
    int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
    int64_t stride[3] = {1, 1, 1}, dil[3] = {1, 1, 1}, pad_lo[3] = {0, 0, 0}, pad_hi[3] = {0, 0, 0};
    int spatial = 0;

    int64_t in_plane() const { return in[0] * in[1] * in[2]; }
    int64_t out_plane() const { return out[0] * out[1] * out[2]; }
    int64_t taps() const { return k[0] * k[1] * k[2]; }
    int64_t in_per_group() const { return in_ch / group; }
    int64_t out_per_group() const { return out_ch / group; }
};

// Rank, kernel_shape/strides/dilations/pads and the spatial dims; channels are each op's to check.
bool read_conv_geometry(const Node& n, ConvGeometry& g, std::string& err);

}  // namespace qnnb
