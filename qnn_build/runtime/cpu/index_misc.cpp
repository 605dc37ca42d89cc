// Ops built on positions: CumSum (float32, int32, int64; exclusive/reverse), Trilu (any dtype: the
// elements outside the kept triangle of the last two dims become zero) and OneHot (indices of any
// integer or float dtype; the output takes `values` = [off, on], of any dtype). Axes and k are
// resolved by the converter (params).
#include <cmath>

#include "../core/parallel.h"
#include "../core/trilu.h"
#include "movement.h"

namespace qnnb {
namespace {

// A tensor viewed as [outer, n, inner] around one axis.
struct AxisView {
    int64_t outer = 1, n = 1, inner = 1;
};

AxisView view_around(const Tensor& t, int64_t axis) {
    AxisView v;
    for (int d = 0; d < t.rank(); ++d) {
        if (d < axis) v.outer *= t.dim(d);
        if (d == axis) v.n = t.dim(d);
        if (d > axis) v.inner *= t.dim(d);
    }
    return v;
}

// ---- CumSum ----

bool prepare_cumsum(Node& n, std::string& err) {
    const qnnb_dtype t = n.in[0]->dtype;
    if ((t != QNNB_FLOAT32 && t != QNNB_INT32 && t != QNNB_INT64) || n.out[0]->dtype != t) {
        err = std::string("dtype ") + dtype_name(t) + " is not supported";
        return false;
    }
    const int64_t axis = n.params.i("axis", 0);
    if (axis < 0 || axis >= n.in[0]->rank()) {
        err = "axis out of range";
        return false;
    }
    n.make_state<AxisView>() = view_around(*n.in[0], axis);
    return true;
}

template <class T>
void run_cumsum_as(Node& n, const ExecContext& ctx) {
    const AxisView& v = n.state_as<AxisView>();
    const bool exclusive = n.params.i("exclusive", 0) != 0, reverse = n.params.i("reverse", 0) != 0;
    const T* x = n.in[0]->in<T>();
    T* y = n.out[0]->out<T>();
    parallel_for(ctx, v.outer, [&](int64_t o) {
        for (int64_t i = 0; i < v.inner; ++i) {
            T acc = 0;
            for (int64_t step = 0; step < v.n; ++step) {
                const int64_t j = reverse ? v.n - 1 - step : step;
                const int64_t at = (o * v.n + j) * v.inner + i;
                if (exclusive) {
                    y[at] = acc;
                    acc += x[at];
                } else {
                    acc += x[at];
                    y[at] = acc;
                }
            }
        }
    });
}

void run_cumsum(Node& n, const ExecContext& ctx) {
    switch (n.in[0]->dtype) {
        case QNNB_INT32: run_cumsum_as<int32_t>(n, ctx); break;
        case QNNB_INT64: run_cumsum_as<int64_t>(n, ctx); break;
        default: run_cumsum_as<float>(n, ctx);
    }
}

// ---- Trilu ----

bool prepare_trilu(Node& n, std::string& err) {
    if (n.in[0]->rank() < 2 || n.out[0]->dtype != n.in[0]->dtype || n.out[0]->shape != n.in[0]->shape) {
        err = "Trilu takes a tensor of rank >= 2 to one of the same shape";
        return false;
    }
    return true;
}

void run_trilu(Node& n, const ExecContext& ctx) {
    trilu_rows(*n.in[0], *n.out[0], n.params.i("k", 0), n.params.i("upper", 1) != 0, nullptr, ctx);
}

// ---- OneHot ----

bool prepare_onehot(Node& n, std::string& err) {
    const Tensor& idx = *n.in[0];
    const Tensor& values = *n.in[1];
    if (values.numel() != 2 || values.dtype != n.out[0]->dtype) {
        err = "values must be two elements [off, on] of the output's dtype";
        return false;
    }
    const qnnb_dtype t = idx.dtype;
    if (t != QNNB_INT64 && t != QNNB_INT32 && t != QNNB_FLOAT32 && t != QNNB_INT8 && t != QNNB_UINT8) {
        err = std::string("indices of dtype ") + dtype_name(t) + " are not supported";
        return false;
    }
    const int64_t axis = n.params.i("axis", -1);
    if (axis < 0 || axis >= n.out[0]->rank()) {
        err = "axis out of range";
        return false;
    }
    n.make_state<AxisView>() = view_around(*n.out[0], axis);
    return true;
}

int64_t index_value(const Tensor& t, int64_t i) {
    switch (t.dtype) {
        case QNNB_INT64: return t.in<int64_t>()[i];
        case QNNB_INT32: return t.in<int32_t>()[i];
        case QNNB_INT8: return t.in<int8_t>()[i];
        case QNNB_UINT8: return t.in<uint8_t>()[i];
        default: return static_cast<int64_t>(std::trunc(t.in<float>()[i]));
    }
}

void run_onehot(Node& n, const ExecContext&) {
    const AxisView& v = n.state_as<AxisView>();  // output: [outer, depth, inner]; indices: [outer, inner]
    const Tensor& idx = *n.in[0];
    movement::with_element_type(dtype_size(n.out[0]->dtype), [&](auto tag) {
        using T = decltype(tag);
        const T off = n.in[1]->in<T>()[0], on = n.in[1]->in<T>()[1];
        T* y = n.out[0]->out<T>();
        std::fill(y, y + n.out[0]->numel(), off);
        for (int64_t o = 0; o < v.outer; ++o)
            for (int64_t i = 0; i < v.inner; ++i) {
                int64_t d = index_value(idx, o * v.inner + i);
                if (d < 0) d += v.n;
                if (d >= 0 && d < v.n) y[(o * v.n + d) * v.inner + i] = on;
            }
    });
}

const Kernel kKernels[] = {
    {"CumSum", prepare_cumsum, run_cumsum},
    {"Trilu", prepare_trilu, run_trilu},
    {"OneHot", prepare_onehot, run_onehot},
};

}  // namespace

extern const KernelTable kCpuIndexMiscKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace qnnb
