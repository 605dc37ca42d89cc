#include "window.h"

#include <algorithm>

namespace qnnb {

bool read_window(const Node& n, const Tensor* x, const Tensor* y, Window& w, std::string& err) {
    const int rank = x->rank();
    if (rank < 3 || rank > 5 || y->rank() != rank) {
        err = "expected input and output of rank 3-5 (1D-3D " + n.op + ")";
        return false;
    }
    const int r = rank - 2;
    const auto kernel = n.params.ints("kernel_shape"), strides = n.params.ints("strides");
    const auto dilations = n.params.ints("dilations"), pads = n.params.ints("pads");
    if ((int)kernel.size() != r || (int)strides.size() != r || (int)dilations.size() != r ||
        (int)pads.size() != 2 * r) {
        err = "kernel_shape/strides/dilations/pads do not match the spatial rank";
        return false;
    }
    w.spatial = r;
    for (int i = 0; i < r; ++i) {
        const int d = 3 - r + i;
        w.in[d] = x->dim(2 + i);
        w.out[d] = y->dim(2 + i);
        w.k[d] = kernel[i];
        w.stride[d] = strides[i];
        w.dil[d] = dilations[i];
        w.pad_lo[d] = pads[i];
        w.pad_hi[d] = pads[r + i];
        if (kernel[i] < 1 || strides[i] < 1 || dilations[i] < 1 || pads[i] < 0 || pads[r + i] < 0) {
            err = "bad kernel_shape/strides/dilations/pads";
            return false;
        }
    }
    return true;
}

bool read_conv_geometry(const Node& n, ConvGeometry& g, std::string& err) {
    const Tensor* x = n.in[0];
    const Tensor* w = n.in[1];
    const Tensor* y = n.out[0];
    if (w->rank() != x->rank()) {
        err = "expected input, weight and output of the same rank";
        return false;
    }
    if (!read_window(n, x, y, g, err)) return false;
    for (int i = 0; i < g.spatial; ++i) {
        if (w->dim(2 + i) != g.k[3 - g.spatial + i]) {
            err = "bad kernel_shape/strides/dilations/pads";
            return false;
        }
    }
    g.batch = x->dim(0);
    g.in_ch = x->dim(1);
    g.out_ch = y->dim(1);
    g.group = n.params.i("group", 1);
    if (g.group < 1 || g.in_ch % g.group || g.out_ch % g.group) {
        err = "channels do not fit the group count";
        return false;
    }
    return true;
}

bool conv_output_fits(const Window& w, std::string& err) {
    for (int d = 0; d < 3; ++d) {
        const int64_t extent = (w.k[d] - 1) * w.dil[d] + 1;
        if (w.out[d] != (w.in[d] + w.pad_lo[d] + w.pad_hi[d] - extent) / w.stride[d] + 1) {
            err = "output shape does not match kernel/strides/pads/dilations";
            return false;
        }
    }
    return true;
}

void valid_range(int64_t off, int64_t s, int64_t n, int64_t out, int64_t& lo, int64_t& hi) {
    lo = off >= 0 ? 0 : (-off + s - 1) / s;
    hi = n - 1 - off < 0 ? 0 : (n - 1 - off) / s + 1;
    lo = std::min(lo, out);
    hi = std::max(lo, std::min(hi, out));
}

int64_t window_count(const Window& w, int d, int64_t o, bool include_pad) {
    const int64_t first = include_pad ? -w.pad_lo[d] : 0, end = include_pad ? w.in[d] + w.pad_hi[d] : w.in[d];
    int64_t c = 0;
    for (int64_t t = 0; t < w.k[d]; ++t) {
        const int64_t i = o * w.stride[d] - w.pad_lo[d] + t * w.dil[d];
        c += i >= first && i < end;
    }
    return c;
}

bool read_pool_window(const Node& n, Window& w, int64_t& planes, std::string& err) {
    const Tensor* x = n.in[0];
    const Tensor* y = n.out[0];
    if (y->rank() != x->rank() || x->rank() < 2 || y->dim(0) != x->dim(0) || y->dim(1) != x->dim(1)) {
        err = "expected input and output of rank 3-5 (1D-3D pooling) with the same batch and channels";
        return false;
    }
    planes = x->dim(0) * x->dim(1);
    return read_window(n, x, y, w, err);
}

bool read_global_planes(const Node& n, int64_t& planes, int64_t& size, std::string& err) {
    const Tensor* x = n.in[0];
    if (x->rank() < 3 || n.out[0]->numel() != x->dim(0) * x->dim(1)) {
        err = "expected an input of rank >= 3 and one output value per channel";
        return false;
    }
    planes = x->dim(0) * x->dim(1);
    size = planes ? x->numel() / planes : 0;
    return true;
}

}  // namespace qnnb
