// Pad: constant, reflect, edge and wrap modes, with negative pads cropping. Each output coordinate's
// source index is tabled per dim at prepare; a row is then a fill (outside in an outer dim) or its
// padded ends from the table around one contiguous copy of the middle.
#include <algorithm>
#include <cstring>

#include "../core/parallel.h"
#include "movement.h"

namespace qnnb {
namespace movement {
namespace {

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

struct PadState {
    std::vector<std::vector<int64_t>> source;  // per dim, per output index: input index or -1 (constant)
    std::vector<int64_t> in_strides;
    int64_t mid_begin = 0, mid_end = 0;  // output range of the last dim copied straight from the input
    int64_t mid_src = 0;                 // input index of mid_begin
};

int64_t source_index(int64_t o, int64_t begin, int64_t n, PadMode mode) {
    int64_t i = o - begin;
    if (i >= 0 && i < n) return i;
    if (mode == PadMode::kConstant || n == 0) return -1;
    if (mode == PadMode::kEdge) return i < 0 ? 0 : n - 1;
    if (mode == PadMode::kWrap) return ((i % n) + n) % n;
    if (n == 1) return 0;
    const int64_t period = 2 * (n - 1);  // reflect without repeating the edge: a b c b a b c ...
    i = ((i % period) + period) % period;
    return i < n ? i : period - i;
}

bool parse_mode(const std::string& s, PadMode& mode) {
    if (s == "constant") mode = PadMode::kConstant;
    else if (s == "reflect") mode = PadMode::kReflect;
    else if (s == "edge") mode = PadMode::kEdge;
    else if (s == "wrap") mode = PadMode::kWrap;
    else return false;
    return true;
}

template <class T>
void pad_rows(const PadState& s, const T* x, T* y, T value, const std::vector<int64_t>& out_shape,
              const ExecContext& ctx) {
    const int r = static_cast<int>(out_shape.size());
    const int64_t width = out_shape[static_cast<size_t>(r - 1)];
    int64_t rows = 1;
    for (int d = 0; d < r - 1; ++d) rows *= out_shape[static_cast<size_t>(d)];
    const std::vector<int64_t>& last = s.source[static_cast<size_t>(r - 1)];
    const int64_t per_item = std::max<int64_t>(1, 16384 / std::max<int64_t>(width, 1));
    parallel_for(ctx, (rows + per_item - 1) / per_item, [&](int64_t item) {
        const int64_t first = item * per_item, end = std::min(rows, first + per_item);
        int64_t idx[QNNB_MAX_RANK] = {0};
        for (int64_t d = r - 2, rem = first; d >= 0; --d) {
            idx[d] = rem % out_shape[static_cast<size_t>(d)];
            rem /= out_shape[static_cast<size_t>(d)];
        }
        for (int64_t row = first; row < end; ++row) {
            T* out = y + row * width;
            int64_t off = 0;
            bool outside = false;
            for (int d = 0; d < r - 1; ++d) {
                const int64_t i = s.source[static_cast<size_t>(d)][static_cast<size_t>(idx[d])];
                outside |= i < 0;
                off += i * s.in_strides[static_cast<size_t>(d)];
            }
            for (int d = r - 2; d >= 0 && ++idx[d] == out_shape[static_cast<size_t>(d)]; --d) idx[d] = 0;
            if (outside) {
                std::fill(out, out + width, value);
                continue;
            }
            const T* in = x + off;
            for (int64_t o = 0; o < s.mid_begin; ++o) out[o] = last[o] < 0 ? value : in[last[o]];
            std::memcpy(out + s.mid_begin, in + s.mid_src, static_cast<size_t>(s.mid_end - s.mid_begin) * sizeof(T));
            for (int64_t o = s.mid_end; o < width; ++o) out[o] = last[o] < 0 ? value : in[last[o]];
        }
    });
}

}  // namespace

// Params: pads (begin of every dim, then end of every dim; negative crops), mode. Input 1, in
// constant mode: a one-element tensor of the data's dtype holding the pad value.
bool prepare_pad(Node& n, std::string& err) {
    if (!require_same_dtype(n, err)) return false;
    const Tensor& x = *n.in[0];
    const std::vector<int64_t>& out = n.out[0]->shape;
    const size_t r = x.shape.size();
    const std::vector<int64_t> pads = n.params.ints("pads");
    PadMode mode = PadMode::kConstant;
    if (!parse_mode(n.params.s("mode", "constant"), mode)) {
        err = "unknown mode '" + n.params.s("mode") + "'";
        return false;
    }
    if (r == 0 || pads.size() != 2 * r || out.size() != r) {
        err = "pads must give a begin and an end for every dim";
        return false;
    }
    const Tensor* value = n.input(1);
    if (mode == PadMode::kConstant && (!value || value->dtype != x.dtype || value->numel() != 1)) {
        err = "constant mode needs a one-element pad value of the data's dtype";
        return false;
    }
    auto& s = n.make_state<PadState>();
    s.in_strides = contiguous_strides(x.shape);
    for (size_t d = 0; d < r; ++d) {
        if (x.shape[d] + pads[d] + pads[d + r] != out[d]) {
            err = "pads do not match the output shape";
            return false;
        }
        if (x.shape[d] == 0 && out[d] > 0 && mode != PadMode::kConstant) {
            err = "only constant mode can pad an empty dim";
            return false;
        }
        std::vector<int64_t> src(static_cast<size_t>(out[d]));
        for (int64_t o = 0; o < out[d]; ++o) src[static_cast<size_t>(o)] = source_index(o, pads[d], x.shape[d], mode);
        s.source.push_back(std::move(src));
    }
    const int64_t begin = pads[r - 1], width = out[r - 1];
    s.mid_begin = std::min(std::max<int64_t>(begin, 0), width);
    s.mid_end = std::max(s.mid_begin, std::min(width, begin + x.shape[r - 1]));
    s.mid_src = s.mid_begin - begin;
    return true;
}

void run_pad(Node& n, const ExecContext& ctx) {
    const Tensor& y = *n.out[0];
    if (y.numel() == 0) return;
    const PadState& s = n.state_as<PadState>();
    with_element_type(dtype_size(y.dtype), [&](auto zero) {
        using T = decltype(zero);
        const Tensor* v = n.input(1);
        const T value = v ? v->in<T>()[0] : T{};
        pad_rows(s, n.in[0]->in<T>(), y.out<T>(), value, y.shape, ctx);
    });
}

}  // namespace movement
}  // namespace qnnb
