// NumPy-style broadcasting, planned once at finalize: each input gets a stride per output dim
// (0 where it is broadcast), and dims that broadcast alike are merged so the innermost loop is as
// long and as contiguous as possible.
#pragma once

#include <string>
#include <vector>

#include "graph.h"
#include "parallel.h"

namespace qnnb {

struct BroadcastPlan {
    std::vector<int64_t> outer_dims;                 // output dims above the innermost, merged
    std::vector<std::vector<int64_t>> outer_strides; // per input, per outer dim (elements)
    std::vector<int64_t> inner_stride;               // per input: 0 (broadcast) or 1
    int64_t inner = 1;                               // length of the innermost run
    int64_t outer = 1;                               // product of outer_dims

    // Element offset of each input at the start of outer row `row`.
    void offsets(int64_t row, int64_t* offs) const {
        const size_t n = inner_stride.size();
        for (size_t k = 0; k < n; ++k) offs[k] = 0;
        for (size_t d = outer_dims.size(); d-- > 0;) {
            int64_t idx = row % outer_dims[d];
            row /= outer_dims[d];
            for (size_t k = 0; k < n; ++k) offs[k] += idx * outer_strides[k][d];
        }
    }
};

// y[i] = f(a[..], b[..]) over the output of a two-input plan, rows shared among the threads.
template <class TA, class TB, class R, class F>
void broadcast_rows(const BroadcastPlan& p, const TA* a, const TB* b, R* y, const ExecContext& ctx, F f) {
    const int64_t sa = p.inner_stride[0], sb = p.inner_stride[1];
    parallel_for(ctx, p.outer, [&](int64_t row) {
        int64_t off[2];
        p.offsets(row, off);
        const TA* pa = a + off[0];
        const TB* pb = b + off[1];
        R* py = y + row * p.inner;
        for (int64_t i = 0; i < p.inner; ++i) py[i] = f(pa[i * sa], pb[i * sb]);
    });
}

// Fails (with err set) when an input does not broadcast to `out_shape`.
bool plan_broadcast(const std::vector<const Tensor*>& inputs, const std::vector<int64_t>& out_shape,
                    BroadcastPlan& plan, std::string& err);

// MatMul's products, numpy.matmul semantics, on both backends: 1-D operands promoted (A [K] as
// [1,K], B [K] as [K,1]; the added dim is absent from Y), batch dims broadcast. When B is a single
// matrix, A's batch dims merge into M and one product does everything.
struct MatMulBatches {
    int64_t m = 0, k = 0, n = 0;
    std::vector<int64_t> a_off, b_off, y_off;  // per product: element offsets of its A, B, Y matrices
};

// Fails (with err set) when the operands do not multiply or Y does not hold the products.
bool plan_matmul_batches(const Tensor& a, const Tensor& b, const Tensor& y, MatMulBatches& plan, std::string& err);

}  // namespace qnnb
