// The kernel vocabulary both backends share for windowed ops (Conv, ConvTranspose, the pools) and
// for vectorised column loops. Spatial dims are handled as 3D (D, H, W), with leading 1s for 1D/2D.
#pragma once

#include <string>

#include "graph.h"

namespace qnnb {

// A sliding window over the spatial dims: input and output extents, kernel, strides, dilations and
// pads. Tap t of output o along dim d reads input index o * stride[d] - pad_lo[d] + t * dil[d].
struct Window {
    int spatial = 0;  // 1-3: the op's own spatial rank
    int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
    int64_t stride[3] = {1, 1, 1}, dil[3] = {1, 1, 1}, pad_lo[3] = {0, 0, 0}, pad_hi[3] = {0, 0, 0};

    int64_t in_plane() const { return in[0] * in[1] * in[2]; }
    int64_t out_plane() const { return out[0] * out[1] * out[2]; }
    int64_t taps() const { return k[0] * k[1] * k[2]; }
};

// kernel_shape/strides/dilations/pads of `n` and the spatial dims of x and y (rank 3-5, the
// same rank), all checked to be in range.
bool read_window(const Node& n, const Tensor* x, const Tensor* y, Window& w, std::string& err);

// Conv's output extents, (in + pads - dilated kernel) / stride + 1 along every dim.
bool conv_output_fits(const Window& w, std::string& err);

// Conv and ConvTranspose: the window plus batch, channels and group.
struct ConvGeometry : Window {
    int64_t batch = 0, in_ch = 0, out_ch = 0, group = 1;

    int64_t in_per_group() const { return in_ch / group; }
    int64_t out_per_group() const { return out_ch / group; }
};

// The window of input 0 to output 0, the weight (input 1) of the same rank with kernel_shape as its
// spatial dims, and a group that divides both channel counts; the weight's channels are each op's
// to check.
bool read_conv_geometry(const Node& n, ConvGeometry& g, std::string& err);

// Output positions o in [lo, hi) (clamped to [0, out)) whose input index o * s + off is in [0, n).
void valid_range(int64_t off, int64_t s, int64_t n, int64_t out, int64_t& lo, int64_t& hi);

// How many taps of output o's window along dim d an AveragePool divides by: those inside the
// input, or with count_include_pad those inside the padded input (as onnxruntime does, a ceil_mode
// window running past the end padding does not count what lies beyond it).
int64_t window_count(const Window& w, int d, int64_t o, bool include_pad);

// MaxPool, AveragePool, LpPool: the window of input 0 to output 0, which keep batch and channels;
// `planes` = batch x channels, each pooled on its own.
bool read_pool_window(const Node& n, Window& w, int64_t& planes, std::string& err);

// GlobalAveragePool / GlobalMaxPool: x of rank >= 3 reduced to one value per (batch, channel)
// plane of `size` contiguous elements.
bool read_global_planes(const Node& n, int64_t& planes, int64_t& size, std::string& err);

// d[i] = s[i * sw] for i in [0, n): unit stride as a memcpy, stride 2 as a loop with a constant
// stride the compiler vectorises, any other stride as a plain gather.
template <class T>
void strided_copy(T* d, const T* s, int64_t n, int64_t sw) {
    if (sw == 1) {
        for (int64_t i = 0; i < n; ++i) d[i] = s[i];
    } else if (sw == 2) {
        for (int64_t i = 0; i < n; ++i) d[i] = s[2 * i];
    } else {
        for (int64_t i = 0; i < n; ++i) d[i] = s[i * sw];
    }
}

// Runs columns(a, e) over [0, n) in vector-friendly pieces: the body in whole vectors of kLanes,
// then a ragged end as the last full vector again (recomputing a few columns with the same
// arithmetic) instead of a scalar tail; below kLanes columns, one plain run.
template <class Fn>
void vector_columns(int64_t n, Fn columns) {
    constexpr int64_t kLanes = 16;
    if (n < kLanes) {
        columns(0, n);
        return;
    }
    const int64_t body = n / kLanes * kLanes;
    columns(0, body);
    if (body < n) columns(n - kLanes, n);
}

}  // namespace qnnb
