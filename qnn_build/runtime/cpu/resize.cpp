// Resize (and Upsample, lowered to it): nearest for every dtype (moved by element size), linear and
// cubic in float32, from the per-axis taps resize_plan.cpp prepared. Interpolation is separable:
// outer dims blend whole planes, then each plane is a horizontal pass over the input rows a block of
// output rows needs, and a vertical pass over those.
#include <algorithm>
#include <cstring>

#include "../core/parallel.h"
#include "movement.h"
#include "resize.h"

namespace qnnb {
namespace resize {
namespace {

// The output rows (all dims but the last) of a block, in order, with the input offset of each one's
// nearest source row (-1 when a coordinate is outside): an odometer over the row's coordinates.
class NearestRows {
public:
    NearestRows(const ResizeState& s, int64_t row) : s_(s), dims_(s.out_shape.size() - 1) {
        for (size_t d = dims_; d-- > 0;) {
            idx_[d] = row % s.out_shape[d];
            row /= s.out_shape[d];
        }
    }
    int64_t offset() const {
        int64_t off = 0;
        bool outside = false;
        for (size_t d = 0; d < dims_; ++d) {
            outside |= s_.axes[d].outside[static_cast<size_t>(idx_[d])] != 0;
            off += s_.axes[d].index[static_cast<size_t>(idx_[d])] * s_.in_strides[d];
        }
        return outside ? -1 : off;
    }
    void next() {
        for (size_t d = dims_; d-- > 0;) {
            if (++idx_[d] < s_.out_shape[d]) return;
            idx_[d] = 0;
        }
    }

private:
    const ResizeState& s_;
    size_t dims_;
    int64_t idx_[QNNB_MAX_RANK + 1] = {0};
};

template <class T>
void gather_row(T* __restrict__ out, const T* __restrict__ in, const int32_t* __restrict__ index, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = in[index[i]];
}

// out[i * K + r] = in[i] for r < K: integer nearest upsampling of a row, without gathers.
template <int K, class T>
void repeat_row(T* __restrict__ out, const T* __restrict__ in, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        for (int r = 0; r < K; ++r) out[i * K + r] = in[i];
}

template <class T>
void run_nearest(const ResizeState& s, const T* x, T* y, T extrapolation, const ExecContext& ctx) {
    const AxisTaps& wx = s.axes.back();
    const int64_t width = s.out_shape.back();
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < s.out_shape.size(); ++d) rows *= s.out_shape[d];
    const int64_t per_item = std::max<int64_t>(1, 16384 / std::max<int64_t>(width, 1));
    parallel_for(ctx, (rows + per_item - 1) / per_item, [&](int64_t item) {
        const int64_t begin = item * per_item, end = std::min(rows, begin + per_item);
        int64_t prev = -2;
        NearestRows rows_of(s, begin);
        for (int64_t row = begin; row < end; ++row, rows_of.next()) {
            T* out = y + row * width;
            const int64_t off = rows_of.offset();
            if (off == prev) {  // upsampled rows repeat: copy the row just written
                std::memcpy(out, out - width, static_cast<size_t>(width) * sizeof(T));
                continue;
            }
            prev = off;
            if (off < 0) {
                std::fill(out, out + width, extrapolation);
                continue;
            }
            if (s.repeat == 2)
                repeat_row<2>(out, x + off, width / 2);
            else
                gather_row(out, x + off, wx.index.data(), width);
            if (wx.any_outside)
                for (int64_t i = 0; i < width; ++i)
                    if (wx.outside[static_cast<size_t>(i)]) out[i] = extrapolation;
        }
    });
}

// out[i] = sum_t w[t][i] * row[index[t][i]] over one axis' taps (restrict: lets the loops vectorise
// with gathers).
void horizontal(const AxisTaps& ax, const float* __restrict__ row, float* __restrict__ out, int64_t width) {
    const size_t n = static_cast<size_t>(width);
    const int32_t* __restrict__ i0 = ax.index.data();
    const float* __restrict__ w0 = ax.weight.data();
    if (ax.taps == 2) {
        const int32_t* __restrict__ i1 = i0 + n;
        const float* __restrict__ w1 = w0 + n;
        for (size_t i = 0; i < n; ++i) out[i] = w0[i] * row[i0[i]] + w1[i] * row[i1[i]];
        return;
    }
    for (size_t i = 0; i < n; ++i) out[i] = w0[i] * row[i0[i]];
    for (int t = 1; t < ax.taps; ++t) {
        const int32_t* __restrict__ it = i0 + t * n;
        const float* __restrict__ wt = w0 + t * n;
        for (size_t i = 0; i < n; ++i) out[i] += wt[i] * row[it[i]];
    }
}

// o[i] (+)= w * v[i]
void scaled_row(float* __restrict__ o, const float* __restrict__ v, float w, int64_t width, bool accumulate) {
    if (accumulate)
        for (int64_t i = 0; i < width; ++i) o[i] += w * v[i];
    else
        for (int64_t i = 0; i < width; ++i) o[i] = w * v[i];
}

// Scratch of one work item: the resized input rows a block of output rows reads.
struct RowCache {
    int64_t lo = 0;                  // first input row of the block
    std::vector<const float*> rows;  // input row lo + k, resized along the last axis (or null)
    std::vector<float> buffer;
};

// The input rows output rows [y0, y1) read, resized along the last axis; when that axis passes
// through, the input rows themselves.
void resize_rows(const ResizeState& s, const float* plane, int64_t y0, int64_t y1, RowCache& cache) {
    const size_t r = s.out_shape.size();
    const AxisTaps& ay = s.axes[r - 2];
    const AxisTaps& ax = s.axes[r - 1];
    const size_t ny = static_cast<size_t>(s.out_shape[r - 2]);
    const int64_t in_w = s.in_shape[r - 1], width = s.out_shape[r - 1];
    int64_t lo = s.in_shape[r - 2], hi = -1;
    for (int t = 0; t < ay.taps; ++t)
        for (int64_t oy = y0; oy < y1; ++oy) {
            const int64_t iy = ay.index[static_cast<size_t>(t) * ny + static_cast<size_t>(oy)];
            lo = std::min(lo, iy);
            hi = std::max(hi, iy);
        }
    cache.lo = lo;
    cache.rows.assign(static_cast<size_t>(hi - lo + 1), nullptr);
    if (!ax.identity) cache.buffer.resize(static_cast<size_t>((hi - lo + 1) * width));
    for (int t = 0; t < ay.taps; ++t)
        for (int64_t oy = y0; oy < y1; ++oy) {
            const int64_t k = ay.index[static_cast<size_t>(t) * ny + static_cast<size_t>(oy)] - lo;
            const float*& row = cache.rows[static_cast<size_t>(k)];
            if (row) continue;
            const float* in_row = plane + (lo + k) * in_w;
            if (ax.identity) {
                row = in_row;
            } else {
                horizontal(ax, in_row, cache.buffer.data() + k * width, width);
                row = cache.buffer.data() + k * width;
            }
        }
}

// out rows [y0, y1) (+)= weight * their vertical taps over the cached rows.
void blend_rows(const ResizeState& s, const RowCache& cache, float weight, bool accumulate, float* out, int64_t y0,
                int64_t y1) {
    const size_t r = s.out_shape.size();
    const AxisTaps& ay = s.axes[r - 2];
    const size_t ny = static_cast<size_t>(s.out_shape[r - 2]);
    const int64_t width = s.out_shape[r - 1];
    for (int64_t oy = y0; oy < y1; ++oy)
        for (int t = 0; t < ay.taps; ++t) {
            const size_t k = static_cast<size_t>(t) * ny + static_cast<size_t>(oy);
            const float* v = cache.rows[static_cast<size_t>(ay.index[k] - cache.lo)];
            scaled_row(out + oy * width, v, ay.weight[k] * weight, width, accumulate || t > 0);
        }
}

// tf_crop_and_resize: output coordinates outside the input take the extrapolation value.
void extrapolate_rows(const ResizeState& s, float* out, int64_t y0, int64_t y1) {
    const size_t r = s.out_shape.size();
    const AxisTaps& ay = s.axes[r - 2];
    const AxisTaps& ax = s.axes[r - 1];
    const int64_t width = s.out_shape[r - 1];
    for (int64_t oy = y0; oy < y1; ++oy) {
        float* o = out + oy * width;
        if (ay.outside[static_cast<size_t>(oy)]) {
            std::fill(o, o + width, s.extrapolation);
        } else if (ax.any_outside) {
            for (int64_t i = 0; i < width; ++i)
                if (ax.outside[static_cast<size_t>(i)]) o[i] = s.extrapolation;
        }
    }
}

// Output rows [y0, y1) of output plane `plane` (`out`: the plane's start). Outer dims that resize
// blend several input planes: every combination of their taps, weighted by the taps' product.
void interp_block(const ResizeState& s, const float* x, float* out, int64_t plane, int64_t y0, int64_t y1,
                  RowCache& cache) {
    const size_t outer = s.out_shape.size() - 2;
    const int64_t plane_size = s.in_shape[outer] * s.in_shape[outer + 1];
    int64_t coord[QNNB_MAX_RANK] = {0};
    bool outside = false;
    int64_t combos = 1;
    for (size_t d = outer; d-- > 0;) {
        coord[d] = plane % s.out_shape[d];
        plane /= s.out_shape[d];
        outside |= s.axes[d].outside[static_cast<size_t>(coord[d])] != 0;
        combos *= s.axes[d].taps;
    }
    if (outside) {
        const int64_t width = s.out_shape[outer + 1];
        std::fill(out + y0 * width, out + y1 * width, s.extrapolation);
        return;
    }
    for (int64_t c = 0; c < combos; ++c) {
        int64_t src_plane = 0, rem = c;
        float weight = 1.f;
        for (size_t d = outer; d-- > 0;) {
            const int64_t taps = s.axes[d].taps;
            const size_t k = static_cast<size_t>((rem % taps) * s.out_shape[d] + coord[d]);
            rem /= taps;
            src_plane += s.axes[d].index[k] * s.plane_strides[d];
            weight *= s.axes[d].weight[k];
        }
        resize_rows(s, x + src_plane * plane_size, y0, y1, cache);
        blend_rows(s, cache, weight, c > 0, out, y0, y1);
    }
    extrapolate_rows(s, out, y0, y1);
}

void run_interp(const ResizeState& s, const float* x, float* y, const ExecContext& ctx) {
    const size_t r = s.out_shape.size();
    const int64_t out_h = s.out_shape[r - 2], width = s.out_shape[r - 1];
    int64_t planes = 1;
    for (size_t d = 0; d + 2 < r; ++d) planes *= s.out_shape[d];
    const int64_t block = std::min(out_h, std::max<int64_t>(1, 8192 / std::max<int64_t>(width, 1)));
    const int64_t blocks = (out_h + block - 1) / block;
    parallel_for(ctx, planes * blocks, [&](int64_t item) {
        RowCache cache;
        const int64_t plane = item / blocks, y0 = (item % blocks) * block;
        interp_block(s, x, y + plane * out_h * width, plane, y0, std::min(out_h, y0 + block), cache);
    });
}

void run_resize(Node& n, const ExecContext& ctx) {
    const ResizeState& s = n.state_as<ResizeState>();
    const Tensor& y = *n.out[0];
    if (y.numel() == 0) return;
    if (s.opt.mode != Mode::kNearest) {
        run_interp(s, n.in[0]->in<float>(), y.out<float>(), ctx);
        return;
    }
    const qnnb_dtype dt = y.dtype;
    movement::with_element_type(dtype_size(dt), [&](auto zero) {
        using T = decltype(zero);
        T ext{};
        if (dt == QNNB_FLOAT32) {
            std::memcpy(&ext, &s.extrapolation, sizeof(T));  // T is 4 bytes here
        } else if (dt != QNNB_FLOAT16) {  // integers: truncated toward zero, as a cast would
            const int64_t v = static_cast<int64_t>(s.extrapolation);
            std::memcpy(&ext, &v, sizeof(T));  // little-endian: the low bytes are the narrow value
        }
        run_nearest(s, n.in[0]->in<T>(), y.out<T>(), ext, ctx);
    });
}

const Kernel kKernels[] = {
    {"Resize", prepare_resize, run_resize},
};

}  // namespace
}  // namespace resize

extern const KernelTable kCpuResizeKernels = {resize::kKernels,
                                              sizeof(resize::kKernels) / sizeof(resize::kKernels[0])};

}  // namespace qnnb
