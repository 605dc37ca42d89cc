// TopK along one axis, shared by the cpu kernel (float32, int32, int64) and the npu's (integer codes,
// docs/npu.md (N26a)): the k first in value order, sorted, ties to the lower index, as onnxruntime.
#pragma once

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "graph.h"
#include "parallel.h"

namespace qnnb {

// The input seen as [outer, n, inner] with the axis in the middle; k from the converter.
struct TopKShape {
    int64_t outer = 1, n = 1, inner = 1, k = 0;
    bool largest = true;
};

// Node params axis, k and largest over input x, checked to be in range.
inline bool read_topk(const Node& node, const Tensor& x, TopKShape& s, std::string& err) {
    const int64_t axis = node.params.i("axis", -1);
    if (axis < 0 || axis >= x.rank()) {
        err = "axis out of range";
        return false;
    }
    for (int d = 0; d < x.rank(); ++d) {
        if (d < axis) s.outer *= x.dim(d);
        if (d > axis) s.inner *= x.dim(d);
    }
    s.n = x.dim(static_cast<int>(axis));
    s.k = node.params.i("k", 0);
    s.largest = node.params.i("largest", 1) != 0;
    if (s.k < 0 || s.k > s.n) {
        err = "k out of range";
        return false;
    }
    return true;
}

// values (or null) and indices (or null), [outer, k, inner] each.
template <class T>
void topk_rows(const TopKShape& s, const T* x, T* values, int64_t* indices, const ExecContext& ctx) {
    parallel_for(ctx, s.outer * s.inner, [&](int64_t row) {
        const int64_t o = row / s.inner, i = row % s.inner;
        const T* src = x + o * s.n * s.inner + i;
        std::vector<int64_t> order(static_cast<size_t>(s.n));
        std::iota(order.begin(), order.end(), 0);
        auto before = [&](int64_t a, int64_t b) {
            const T va = src[a * s.inner], vb = src[b * s.inner];
            if (va != vb) return s.largest ? va > vb : va < vb;
            return a < b;
        };
        std::partial_sort(order.begin(), order.begin() + s.k, order.end(), before);
        for (int64_t j = 0; j < s.k; ++j) {
            const int64_t at = o * s.k * s.inner + j * s.inner + i;
            if (values) values[at] = src[order[static_cast<size_t>(j)] * s.inner];
            if (indices) indices[at] = order[static_cast<size_t>(j)];
        }
    });
}

}  // namespace qnnb
