// Resize planning: each output coordinate of each axis mapped to its input taps (index and weight,
// or "outside" for tf_crop_and_resize), once at prepare. Coordinates use the arithmetic onnxruntime
// uses (float32) with the spec's length_resized; antialias filters follow the ONNX reference.
#include <algorithm>
#include <cmath>

#include "movement.h"
#include "resize.h"

namespace qnnb {
namespace resize {
namespace {

// One axis as the converter described it.
struct AxisSpec {
    int64_t in_len = 1, out_len = 1;
    float scale = 1.f;   // the effective scale
    float length = 1.f;  // the spec's length_resized: scale * in_len, not rounded
    float roi0 = 0.f, roi1 = 1.f;
    bool identity = true;
};

float original_coordinate(Coord m, float x, const AxisSpec& a) {
    const float in = static_cast<float>(a.in_len), len = a.length, scale = a.scale;
    switch (m) {
        case Coord::kHalfPixel: return (x + 0.5f) / scale - 0.5f;
        case Coord::kHalfPixelSymmetric: {
            const float adjustment = static_cast<float>(a.out_len) / len;
            const float offset = in / 2 * (1 - adjustment);
            return static_cast<float>(offset + (x + 0.5) / scale - 0.5);
        }
        case Coord::kPytorchHalfPixel: return len == 1.f ? -0.5f : (x + 0.5f) / scale - 0.5f;
        case Coord::kAlignCorners: return len == 1.f ? 0.f : x * (in - 1) / (len - 1);
        case Coord::kAsymmetric: return x / scale;
        case Coord::kTfHalfPixelForNearest: return (x + 0.5f) / scale;
        case Coord::kTfCropAndResize:
            return len == 1.f ? static_cast<float>(0.5 * (a.roi0 + a.roi1) * (in - 1))
                              : a.roi0 * (in - 1) + (x * (a.roi1 - a.roi0) * (in - 1)) / (len - 1);
    }
    return 0.f;
}

int64_t nearest_index(Nearest m, float x, bool downsampling) {
    switch (m) {
        case Nearest::kRoundPreferFloor:
            if (x == static_cast<float>(static_cast<int64_t>(x)) + 0.5f) return static_cast<int64_t>(std::floor(x));
            return static_cast<int64_t>(std::round(x));
        case Nearest::kRoundPreferCeil: return static_cast<int64_t>(std::round(x));
        case Nearest::kFloor: return static_cast<int64_t>(std::floor(x));
        case Nearest::kCeil: return static_cast<int64_t>(std::ceil(x));
        case Nearest::kLegacy: return downsampling ? static_cast<int64_t>(std::ceil(x)) : static_cast<int64_t>(x);
    }
    return 0;
}

void cubic_weights(float s, float a, float* w) {
    const float s1 = s + 1, s2 = 1 - s, s3 = 2 - s;
    w[0] = ((a * s1 - 5 * a) * s1 + 8 * a) * s1 - 4 * a;
    w[1] = ((a + 2) * s - (a + 3)) * s * s + 1;
    w[2] = ((a + 2) * s2 - (a + 3)) * s2 * s2 + 1;
    w[3] = ((a * s3 - 5 * a) * s3 + 8 * a) * s3 - 4 * a;
}

// The cubic convolution kernel at distance |x|.
float cubic_kernel(float x, float a) {
    x = std::fabs(x);
    if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0.f;
}

bool antialiased(const Options& o, float scale) { return o.antialias && o.mode != Mode::kNearest && scale < 1.f; }

// Taps per output coordinate: 1 for nearest, 2 linear, 4 cubic; an antialiasing filter stretched by
// 1/scale covers 2 * ceil-ish(support / scale) input positions (as the ONNX reference counts them).
int tap_count(const Options& o, const AxisSpec& a) {
    if (a.identity || o.mode == Mode::kNearest) return 1;
    if (!antialiased(o, a.scale)) return o.mode == Mode::kLinear ? 2 : 4;
    const double support = o.mode == Mode::kLinear ? 1.0 : 2.0;
    const int start = static_cast<int>(std::floor(-support / a.scale)) + 1;
    return 2 - 2 * start;
}

// Antialiased taps around x, following the reference: positions base + start + j, where base is the
// input index left of x (x - 1 when x is whole), weighted by the filter at (position - x) * scale.
void antialias_taps(const Options& o, float x, float scale, int taps, int64_t* idx, float* w) {
    const float xf = std::floor(x);
    const float base = x == xf ? xf - 1 : xf, ratio = x - base;
    const int start = 1 - taps / 2;
    float sum = 0.f;
    for (int j = 0; j < taps; ++j) {
        const float arg = (static_cast<float>(start + j) - ratio) * scale;
        w[j] = o.mode == Mode::kLinear ? std::max(0.f, 1.f - std::fabs(arg)) : cubic_kernel(arg, o.cubic_a);
        idx[j] = static_cast<int64_t>(base) + start + j;
        sum += w[j];
    }
    for (int j = 0; j < taps; ++j) w[j] /= sum;
}

// Linear taps as onnxruntime computes them: x clamped into the input, then its two neighbours.
void linear_taps(float x, int64_t last, int64_t* idx, float* w) {
    const float xc = std::min(std::max(x, 0.f), static_cast<float>(last));
    const int64_t i0 = std::min(static_cast<int64_t>(xc), last);
    const float frac = xc - static_cast<float>(i0);
    idx[0] = i0;
    idx[1] = i0 + 1;
    w[0] = 1.f - frac;
    w[1] = frac;
}

void cubic_taps(const Options& o, float x, int64_t* idx, float* w) {
    const float xf = std::floor(x);
    cubic_weights(x - xf, o.cubic_a, w);
    for (int t = 0; t < 4; ++t) idx[t] = static_cast<int64_t>(xf) - 1 + t;
}

AxisTaps plan_axis(const Options& o, const AxisSpec& a) {
    AxisTaps ax;
    ax.identity = a.identity;
    ax.taps = tap_count(o, a);
    const size_t n = static_cast<size_t>(a.out_len), taps = static_cast<size_t>(ax.taps);
    ax.index.assign(n * taps, 0);
    ax.weight.assign(n * taps, 0.f);
    ax.outside.assign(n, 0);
    const int64_t last = a.in_len - 1;
    std::vector<int64_t> idx(taps);
    std::vector<float> w(taps);
    for (size_t y = 0; y < n; ++y) {
        if (a.identity) {
            ax.index[y] = static_cast<int32_t>(y);
            ax.weight[y] = 1.f;
            continue;
        }
        const float x = original_coordinate(o.coord, static_cast<float>(y), a);
        if (o.coord == Coord::kTfCropAndResize && (x < 0 || x > static_cast<float>(last))) {
            ax.outside[y] = 1;
            ax.any_outside = true;
        }
        if (o.mode == Mode::kNearest) {
            idx[0] = nearest_index(o.nearest, x, a.scale < 1.f);
            w[0] = 1.f;
        } else if (antialiased(o, a.scale)) {
            antialias_taps(o, x, a.scale, ax.taps, idx.data(), w.data());
        } else if (o.mode == Mode::kLinear) {
            linear_taps(x, last, idx.data(), w.data());
        } else {
            cubic_taps(o, x, idx.data(), w.data());
        }
        if (o.exclude_outside && o.mode != Mode::kNearest) {  // outside taps get no weight; the rest renormalised
            float sum = 0.f;
            for (size_t t = 0; t < taps; ++t) {
                if (idx[t] < 0 || idx[t] > last) w[t] = 0.f;
                sum += w[t];
            }
            for (size_t t = 0; t < taps && sum != 0.f; ++t) w[t] /= sum;
        }
        for (size_t t = 0; t < taps; ++t) {  // edge: indices outside the input read its border
            ax.index[t * n + y] = static_cast<int32_t>(std::min(std::max<int64_t>(idx[t], 0), last));
            ax.weight[t * n + y] = w[t];
        }
    }
    return ax;
}

template <class E>
bool parse(const std::string& s, const std::vector<std::pair<const char*, E>>& names, E& out) {
    for (const auto& kv : names)
        if (s == kv.first) {
            out = kv.second;
            return true;
        }
    return false;
}

bool parse_options(const Params& p, Options& o, std::string& err) {
    const std::string mode = p.s("mode", "nearest"), coord = p.s("coordinate_transformation_mode", "half_pixel"),
                      nearest = p.s("nearest_mode", "round_prefer_floor");
    if (!parse<Mode>(mode, {{"nearest", Mode::kNearest}, {"linear", Mode::kLinear}, {"cubic", Mode::kCubic}}, o.mode)) {
        err = "unknown mode '" + mode + "'";
        return false;
    }
    if (!parse<Coord>(coord, {{"half_pixel", Coord::kHalfPixel}, {"half_pixel_symmetric", Coord::kHalfPixelSymmetric},
                              {"pytorch_half_pixel", Coord::kPytorchHalfPixel}, {"align_corners", Coord::kAlignCorners},
                              {"asymmetric", Coord::kAsymmetric}, {"tf_half_pixel_for_nearest", Coord::kTfHalfPixelForNearest},
                              {"tf_crop_and_resize", Coord::kTfCropAndResize}}, o.coord)) {
        err = "unknown coordinate_transformation_mode '" + coord + "'";
        return false;
    }
    if (!parse<Nearest>(nearest, {{"round_prefer_floor", Nearest::kRoundPreferFloor},
                                  {"round_prefer_ceil", Nearest::kRoundPreferCeil}, {"floor", Nearest::kFloor},
                                  {"ceil", Nearest::kCeil}, {"legacy", Nearest::kLegacy}}, o.nearest)) {
        err = "unknown nearest_mode '" + nearest + "'";
        return false;
    }
    o.cubic_a = p.f("cubic_coeff_a", -0.75f);
    o.exclude_outside = p.i("exclude_outside", 0) != 0;
    o.antialias = p.i("antialias", 0) != 0;
    return true;
}

}  // namespace

// Params: mode, coordinate_transformation_mode, nearest_mode ("legacy": opset < 11 rounding),
// scales (one per dim), lengths (the spec's unrounded scale * input length; default the output's),
// roi (begins then ends, tf_crop_and_resize only), extrapolation_value, cubic_coeff_a,
// exclude_outside, antialias.
bool prepare_resize(Node& n, std::string& err) {
    const Tensor& x = *n.in[0];
    const Tensor& y = *n.out[0];
    if (!movement::require_same_dtype(n, err)) return false;
    auto& s = n.make_state<ResizeState>();
    if (!parse_options(n.params, s.opt, err)) return false;
    if (s.opt.mode != Mode::kNearest && x.dtype != QNNB_FLOAT32) {
        err = "linear and cubic resize need float32";
        return false;
    }
    const size_t r = x.shape.size();
    const std::vector<float> scales = n.params.floats("scales");
    std::vector<float> roi = n.params.floats("roi"), lengths = n.params.floats("lengths");
    if (roi.empty()) {
        roi.assign(r, 0.f);
        roi.insert(roi.end(), r, 1.f);
    }
    if (lengths.empty())
        for (size_t d = 0; d < r; ++d) lengths.push_back(static_cast<float>(y.shape[d]));
    if (r == 0 || y.shape.size() != r || scales.size() != r || roi.size() != 2 * r || lengths.size() != r) {
        err = "scales, lengths and roi must give one value per dim";
        return false;
    }
    s.extrapolation = n.params.f("extrapolation_value", 0.f);
    if (s.opt.coord == Coord::kTfCropAndResize && s.extrapolation != 0.f && x.dtype == QNNB_FLOAT16) {
        err = "a nonzero extrapolation_value is not supported for float16";
        return false;
    }
    const size_t lead = r < 2 ? 2 - r : 0;
    s.in_shape.assign(lead, 1);
    s.out_shape.assign(lead, 1);
    for (size_t d = 0; d < lead; ++d) s.axes.push_back(plan_axis(s.opt, AxisSpec()));
    for (size_t d = 0; d < r; ++d) {
        if (scales[d] <= 0.f || (x.shape[d] == 0 && y.shape[d] != 0)) {
            err = "invalid scale or empty input dim";
            return false;
        }
        AxisSpec a;
        a.in_len = x.shape[d];
        a.out_len = y.shape[d];
        a.scale = scales[d];
        a.length = lengths[d];
        a.roi0 = roi[d];
        a.roi1 = roi[r + d];
        // An axis kept at its size with scale 1 (and the whole roi) passes through untouched.
        a.identity = a.scale == 1.f && a.in_len == a.out_len &&
                     (s.opt.coord != Coord::kTfCropAndResize || (a.roi0 == 0.f && a.roi1 == 1.f));
        s.in_shape.push_back(a.in_len);
        s.out_shape.push_back(a.out_len);
        s.axes.push_back(plan_axis(s.opt, a));
    }
    s.in_strides = movement::contiguous_strides(s.in_shape);
    const AxisTaps& last = s.axes.back();
    const int64_t in_w = s.in_shape.back(), out_w = s.out_shape.back();
    if (s.opt.mode == Mode::kNearest && !last.any_outside && in_w > 0 && out_w % in_w == 0) {
        const int64_t k = out_w / in_w;
        bool repeats = true;
        for (int64_t i = 0; i < out_w && repeats; ++i) repeats = last.index[static_cast<size_t>(i)] == i / k;
        s.repeat = repeats ? k : 0;
    }
    s.plane_strides = movement::contiguous_strides(std::vector<int64_t>(s.in_shape.begin(), s.in_shape.end() - 2));
    return true;
}

}  // namespace resize
}  // namespace qnnb
