// Resize, shared between its planning (resize_plan.cpp: coordinates, taps) and its kernels
// (resize.cpp). Nothing here is used by other families.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../core/graph.h"

namespace qnnb {
namespace resize {

enum class Coord { kHalfPixel, kHalfPixelSymmetric, kPytorchHalfPixel, kAlignCorners, kAsymmetric,
                   kTfHalfPixelForNearest, kTfCropAndResize };
enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kLegacy };
enum class Mode { kNearest, kLinear, kCubic };

struct Options {
    Mode mode = Mode::kNearest;
    Coord coord = Coord::kHalfPixel;
    Nearest nearest = Nearest::kRoundPreferFloor;
    float cubic_a = -0.75f;
    bool exclude_outside = false;
    bool antialias = false;
};

// One axis: for each output coordinate, `taps` input indices and weights (stored tap-major), and
// whether it falls outside the input (tf_crop_and_resize: the output is the extrapolation value).
struct AxisTaps {
    int taps = 1;
    bool identity = false;
    bool any_outside = false;
    std::vector<int32_t> index;
    std::vector<float> weight;
    std::vector<uint8_t> outside;
};

struct ResizeState {
    Options opt;
    std::vector<int64_t> in_shape, out_shape;  // rank >= 2 (leading 1s added)
    std::vector<AxisTaps> axes;
    std::vector<int64_t> in_strides;
    std::vector<int64_t> plane_strides;  // of the input's outer dims, in planes
    float extrapolation = 0.f;
    int64_t repeat = 0;  // nearest: the last axis maps output i to input i / repeat (0: some other map)
};

bool prepare_resize(Node& n, std::string& err);

}  // namespace resize
}  // namespace qnnb
