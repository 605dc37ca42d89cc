// Index ops that move elements: GatherElements, GatherND, ScatterElements, ScatterND (any dtype; the
// scatters' add/mul/max/min reductions in float32, int32 and int64). Indices are int32 or int64 and
// may be negative (counted from the end); an index out of range (invalid ONNX) is clamped, never
// read or written out of bounds. Scatters apply updates in order, so a repeated index keeps the last.
#include <algorithm>
#include <cstring>

#include "movement.h"

namespace qnnb {
namespace {

struct IndexState {
    std::vector<int64_t> data_strides, index_dims;
    int64_t axis = 0, k = 0, batch = 1, slice = 1, tuples = 0;
};

int64_t index_at(const Tensor& t, int64_t i) {
    return t.dtype == QNNB_INT64 ? t.in<int64_t>()[i] : static_cast<int64_t>(t.in<int32_t>()[i]);
}

int64_t clamp_index(int64_t v, int64_t n) {
    if (v < 0) v += n;
    return std::min(std::max<int64_t>(v, 0), n - 1);
}

bool require_indices(const Tensor& t, std::string& err) {
    if (t.dtype == QNNB_INT64 || t.dtype == QNNB_INT32) return true;
    err = "indices must be int64 or int32";
    return false;
}

// ---- GatherElements / ScatterElements: element i of the indices names a position along `axis` ----

bool prepare_elements(Node& n, std::string& err) {
    const Tensor& data = *n.in[0];
    const Tensor& idx = *n.in[1];
    if (!require_indices(idx, err)) return false;
    if (n.out[0]->dtype != data.dtype || data.rank() != idx.rank() || data.rank() == 0) {
        err = "data and indices must have one rank, and the output the data's dtype";
        return false;
    }
    const bool scatter = n.op == "ScatterElements";
    if (scatter && (n.in[2]->dtype != data.dtype || n.in[2]->shape != idx.shape)) {
        err = "updates must have the indices' shape and the data's dtype";
        return false;
    }
    auto& s = n.make_state<IndexState>();
    s.axis = n.params.i("axis", 0);
    s.data_strides = movement::contiguous_strides(data.shape);
    s.index_dims = idx.shape;
    for (int d = 0; d < data.rank(); ++d)
        if (d != s.axis && idx.dim(d) > data.dim(d)) {
            err = "indices are larger than the data along a dim other than the axis";
            return false;
        }
    return true;
}

// Offset in the data of element `i` of the indices (row-major over index_dims).
int64_t element_offset(const IndexState& s, const Tensor& data, const Tensor& idx, int64_t i) {
    int64_t off = 0, rest = i;
    for (size_t d = s.index_dims.size(); d-- > 0;) {
        int64_t pos = rest % s.index_dims[d];
        rest /= s.index_dims[d];
        if (static_cast<int64_t>(d) == s.axis) pos = clamp_index(index_at(idx, i), data.dim(static_cast<int>(d)));
        off += pos * s.data_strides[d];
    }
    return off;
}

void run_gather_elements(Node& n, const ExecContext&) {
    const IndexState& s = n.state_as<IndexState>();
    const Tensor& data = *n.in[0];
    const Tensor& idx = *n.in[1];
    movement::with_element_type(dtype_size(data.dtype), [&](auto t) {
        using T = decltype(t);
        const T* x = data.in<T>();
        T* y = n.out[0]->out<T>();
        for (int64_t i = 0, total = idx.numel(); i < total; ++i) y[i] = x[element_offset(s, data, idx, i)];
    });
}

// ---- GatherND / ScatterND: each index tuple (the last dim of the indices) names a slice ----

bool prepare_nd(Node& n, std::string& err) {
    const Tensor& data = *n.in[0];
    const Tensor& idx = *n.in[1];
    if (!require_indices(idx, err)) return false;
    auto& s = n.make_state<IndexState>();
    const int64_t b = n.params.i("batch_dims", 0);
    s.k = idx.rank() ? idx.dim(idx.rank() - 1) : 0;
    if (idx.rank() < 1 || b < 0 || b >= idx.rank() || b + s.k > data.rank() || n.out[0]->dtype != data.dtype) {
        err = "indices of rank >= 1 whose last dim plus batch_dims fits the data's rank";
        return false;
    }
    for (int64_t d = 0; d < b; ++d) s.batch *= data.dim(static_cast<int>(d));
    for (int d = static_cast<int>(b + s.k); d < data.rank(); ++d) s.slice *= data.dim(d);
    s.tuples = idx.numel() / std::max<int64_t>(s.k, 1) / std::max<int64_t>(s.batch, 1);
    if (s.k == 0) s.tuples = idx.numel() / std::max<int64_t>(s.batch, 1);
    s.data_strides = movement::contiguous_strides(data.shape);
    s.axis = b;  // the first indexed dim
    if (n.op == "ScatterND" && (n.in[2]->dtype != data.dtype || n.in[2]->numel() != s.batch * s.tuples * s.slice)) {
        err = "updates must hold one data slice per index tuple, in the data's dtype";
        return false;
    }
    return true;
}

// Element offset in the data of the slice named by tuple `t` of batch item `bi`.
int64_t slice_offset(const IndexState& s, const Tensor& data, const Tensor& idx, int64_t bi, int64_t t) {
    const int64_t first = (bi * s.tuples + t) * s.k;
    int64_t off = bi * (s.axis ? s.data_strides[static_cast<size_t>(s.axis - 1)] : 0);
    for (int64_t j = 0; j < s.k; ++j) {
        const int d = static_cast<int>(s.axis + j);
        off += clamp_index(index_at(idx, first + j), data.dim(d)) * s.data_strides[static_cast<size_t>(d)];
    }
    return off;
}

void run_gather_nd(Node& n, const ExecContext&) {
    const IndexState& s = n.state_as<IndexState>();
    const Tensor& data = *n.in[0];
    const size_t bytes = static_cast<size_t>(s.slice) * dtype_size(data.dtype);
    const char* x = static_cast<const char*>(data.read_ptr());
    char* y = static_cast<char*>(n.out[0]->data);
    for (int64_t bi = 0; bi < s.batch; ++bi)
        for (int64_t t = 0; t < s.tuples; ++t, y += bytes)
            std::memcpy(y, x + slice_offset(s, data, *n.in[1], bi, t) * static_cast<int64_t>(dtype_size(data.dtype)),
                        bytes);
}

// ---- the scatters: copy the data, then apply each update ----

enum Reduction { kNone, kAdd, kMul, kMax, kMin };

Reduction reduction_of(const std::string& how) {
    return how == "add" ? kAdd : how == "mul" ? kMul : how == "max" ? kMax : how == "min" ? kMin : kNone;
}

template <class T>
T reduce(Reduction how, T old, T v) {
    switch (how) {
        case kAdd: return old + v;
        case kMul: return old * v;
        case kMax: return std::max(old, v);
        case kMin: return std::min(old, v);
        default: return v;
    }
}

bool prepare_scatter(Node& n, std::string& err) {
    const std::string how = n.params.s("reduction", "none");
    const qnnb_dtype t = n.in[0]->dtype;
    if (how != "none" && t != QNNB_FLOAT32 && t != QNNB_INT32 && t != QNNB_INT64) {
        err = "reduction '" + how + "' on dtype " + dtype_name(t);
        return false;
    }
    return n.op == "ScatterND" ? prepare_nd(n, err) : prepare_elements(n, err);
}

// Calls fn(T{}) with the element type the scatter computes in: typed for a reduction, by size otherwise.
template <class Fn>
void with_scatter_type(const Node& n, Fn fn) {
    if (n.params.s("reduction", "none") != "none") {
        if (n.in[0]->dtype == QNNB_FLOAT32) return fn(float{});
        if (n.in[0]->dtype == QNNB_INT32) return fn(int32_t{});
        return fn(int64_t{});
    }
    movement::with_element_type(dtype_size(n.in[0]->dtype), fn);
}

void run_scatter(Node& n, const ExecContext&) {
    const IndexState& s = n.state_as<IndexState>();
    const Tensor& data = *n.in[0];
    const Tensor& idx = *n.in[1];
    const Reduction how = reduction_of(n.params.s("reduction", "none"));
    if (n.out[0]->data != data.read_ptr()) std::memcpy(n.out[0]->data, data.read_ptr(), data.nbytes());
    with_scatter_type(n, [&](auto tag) {
        using T = decltype(tag);
        const T* u = n.in[2]->in<T>();
        T* y = n.out[0]->out<T>();
        if (n.op == "ScatterElements") {
            for (int64_t i = 0, total = idx.numel(); i < total; ++i) {
                T& dst = y[element_offset(s, data, idx, i)];
                dst = reduce<T>(how, dst, u[i]);
            }
            return;
        }
        for (int64_t bi = 0; bi < s.batch; ++bi)
            for (int64_t t = 0; t < s.tuples; ++t) {
                T* dst = y + slice_offset(s, data, idx, bi, t);
                const T* src = u + (bi * s.tuples + t) * s.slice;
                for (int64_t e = 0; e < s.slice; ++e) dst[e] = reduce<T>(how, dst[e], src[e]);
            }
    });
}

const Kernel kKernels[] = {
    {"GatherElements", prepare_elements, run_gather_elements},
    {"GatherND", prepare_nd, run_gather_nd},
    {"ScatterElements", prepare_scatter, run_scatter},
    {"ScatterND", prepare_scatter, run_scatter},
};

}  // namespace

extern const KernelTable kCpuGatherScatterKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace qnnb
