#include "broadcast.h"

#include <algorithm>

namespace qnnb {

bool plan_broadcast(const std::vector<const Tensor*>& inputs, const std::vector<int64_t>& out_shape,
                    BroadcastPlan& plan, std::string& err) {
    const size_t rank = out_shape.size();
    const size_t n = inputs.size();
    // Strides of every input aligned to the output's rank (0 where broadcast).
    std::vector<std::vector<int64_t>> strides(n, std::vector<int64_t>(rank, 0));
    for (size_t k = 0; k < n; ++k) {
        const auto& s = inputs[k]->shape;
        if (s.size() > rank) {
            err = "input '" + inputs[k]->name + "' has a higher rank than the output";
            return false;
        }
        int64_t stride = 1;
        for (size_t i = s.size(); i-- > 0;) {
            size_t od = rank - s.size() + i;
            if (s[i] == out_shape[od]) {
                strides[k][od] = s[i] == 1 ? 0 : stride;
            } else if (s[i] != 1) {
                err = "input '" + inputs[k]->name + "' does not broadcast to the output shape";
                return false;
            }
            stride *= s[i];
        }
    }
    // Merge adjacent dims where every input continues contiguously (or stays broadcast).
    std::vector<int64_t> dims;
    std::vector<std::vector<int64_t>> merged(n);
    for (size_t d = 0; d < rank; ++d) {
        if (out_shape[d] == 1) continue;
        bool can_merge = !dims.empty();
        for (size_t k = 0; k < n && can_merge; ++k) {
            int64_t prev = merged[k].back(), cur = strides[k][d];
            can_merge = (prev == 0 && cur == 0) || (cur != 0 && prev == cur * out_shape[d]);
        }
        if (can_merge) {
            dims.back() *= out_shape[d];
            for (size_t k = 0; k < n; ++k) merged[k].back() = strides[k][d];
        } else {
            dims.push_back(out_shape[d]);
            for (size_t k = 0; k < n; ++k) merged[k].push_back(strides[k][d]);
        }
    }
    plan = BroadcastPlan();
    plan.inner_stride.assign(n, 0);
    plan.outer_strides.assign(n, {});
    if (dims.empty()) return true;  // a single element
    plan.inner = dims.back();
    dims.pop_back();
    for (size_t k = 0; k < n; ++k) {
        plan.inner_stride[k] = merged[k].back();
        merged[k].pop_back();
    }
    // An innermost stride other than 0 or 1 cannot happen after merging: the last real dim of a
    // non-broadcast input always has stride 1.
    plan.outer_dims = dims;
    plan.outer_strides = merged;
    for (int64_t d : dims) plan.outer *= d;
    return true;
}

namespace {

// Batch dims of a matmul operand (everything but the last two dims, after 1-D promotion).
std::vector<int64_t> batch_dims(const std::vector<int64_t>& shape) {
    if (shape.size() <= 2) return {};
    return std::vector<int64_t>(shape.begin(), shape.end() - 2);
}

// Element offsets of each batch matrix of an operand with `dims`, broadcast to `out_dims`.
std::vector<int64_t> batch_offsets(const std::vector<int64_t>& dims, const std::vector<int64_t>& out_dims,
                                   int64_t matrix_size) {
    const size_t rank = out_dims.size();
    std::vector<int64_t> stride(rank, 0);
    int64_t s = matrix_size;
    for (size_t i = dims.size(); i-- > 0;) {
        const size_t od = rank - dims.size() + i;
        stride[od] = dims[i] == 1 ? 0 : s;
        s *= dims[i];
    }
    int64_t total = 1;
    for (int64_t d : out_dims) total *= d;
    std::vector<int64_t> offs(static_cast<size_t>(total));
    for (int64_t idx = 0; idx < total; ++idx) {
        int64_t rest = idx, off = 0;
        for (size_t d = rank; d-- > 0;) {
            off += (rest % out_dims[d]) * stride[d];
            rest /= out_dims[d];
        }
        offs[static_cast<size_t>(idx)] = off;
    }
    return offs;
}

}  // namespace

bool plan_matmul_batches(const Tensor& a, const Tensor& b, const Tensor& y, MatMulBatches& p, std::string& err) {
    if (a.rank() < 1 || b.rank() < 1) {
        err = "MatMul operands must have rank >= 1";
        return false;
    }
    std::vector<int64_t> as = a.shape, bs = b.shape;
    if (as.size() == 1) as.insert(as.begin(), 1);
    if (bs.size() == 1) bs.push_back(1);
    p.m = as[as.size() - 2];
    p.k = as.back();
    p.n = bs.back();
    if (bs[bs.size() - 2] != p.k) {
        err = "inner dimensions differ";
        return false;
    }
    std::vector<int64_t> ab = batch_dims(as), bb = batch_dims(bs);
    int64_t a_batches = 1, b_batches = 1;
    for (int64_t d : ab) a_batches *= d;
    for (int64_t d : bb) b_batches *= d;
    if (b_batches == 1) {
        p.m *= a_batches;
        p.a_off = p.b_off = p.y_off = {0};
    } else {
        const size_t rank = std::max(ab.size(), bb.size());
        std::vector<int64_t> out_dims(rank, 1);
        for (size_t i = 0; i < rank; ++i) {
            const int64_t da = i + ab.size() >= rank ? ab[i + ab.size() - rank] : 1;
            const int64_t db = i + bb.size() >= rank ? bb[i + bb.size() - rank] : 1;
            if (da != db && da != 1 && db != 1) {
                err = "batch dims do not broadcast";
                return false;
            }
            out_dims[i] = std::max(da, db);
        }
        p.a_off = batch_offsets(ab, out_dims, p.m * p.k);
        p.b_off = batch_offsets(bb, out_dims, p.k * p.n);
        p.y_off.resize(p.a_off.size());
        for (size_t i = 0; i < p.y_off.size(); ++i) p.y_off[i] = static_cast<int64_t>(i) * p.m * p.n;
    }
    if (y.numel() != static_cast<int64_t>(p.y_off.size()) * p.m * p.n) {
        err = "output size does not match the product";
        return false;
    }
    return true;
}

}  // namespace qnnb
