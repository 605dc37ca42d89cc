// TopK (float32, int32, int64): the k largest (or smallest) along an axis, sorted, with their int64
// indices. Ties keep the lower index first, as onnxruntime does; k comes from the converter (param k).
#include <algorithm>
#include <numeric>

#include "../core/parallel.h"

namespace qnnb {
namespace {

struct TopKState {
    int64_t outer = 1, n = 1, inner = 1, k = 0;
    bool largest = true;
};

bool prepare_topk(Node& n, std::string& err) {
    const Tensor& x = *n.in[0];
    if (x.dtype != QNNB_FLOAT32 && x.dtype != QNNB_INT32 && x.dtype != QNNB_INT64) {
        err = std::string("dtype ") + dtype_name(x.dtype) + " is not supported";
        return false;
    }
    if (n.out.size() != 2 || (n.out[0] && n.out[0]->dtype != x.dtype) || (n.out[1] && n.out[1]->dtype != QNNB_INT64)) {
        err = "outputs must be the values (the input's dtype) and int64 indices";
        return false;
    }
    auto& s = n.make_state<TopKState>();
    const int64_t axis = n.params.i("axis", -1);
    if (axis < 0 || axis >= x.rank()) {
        err = "axis out of range";
        return false;
    }
    for (int d = 0; d < x.rank(); ++d) {
        if (d < axis) s.outer *= x.dim(d);
        if (d > axis) s.inner *= x.dim(d);
    }
    s.n = x.dim(static_cast<int>(axis));
    s.k = n.params.i("k", 0);
    s.largest = n.params.i("largest", 1) != 0;
    if (s.k < 0 || s.k > s.n) {
        err = "k out of range";
        return false;
    }
    return true;
}

template <class T>
void run_topk_as(Node& n, const ExecContext& ctx) {
    const TopKState& s = n.state_as<TopKState>();
    const T* x = n.in[0]->in<T>();
    T* values = n.out[0] ? n.out[0]->out<T>() : nullptr;
    int64_t* indices = n.out[1] ? n.out[1]->out<int64_t>() : nullptr;
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

void run_topk(Node& n, const ExecContext& ctx) {
    switch (n.in[0]->dtype) {
        case QNNB_INT32: run_topk_as<int32_t>(n, ctx); break;
        case QNNB_INT64: run_topk_as<int64_t>(n, ctx); break;
        default: run_topk_as<float>(n, ctx);
    }
}

const Kernel kKernels[] = {{"TopK", prepare_topk, run_topk}};

}  // namespace

extern const KernelTable kCpuTopKKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace qnnb
