#include "broadcast.h"

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

}  // namespace qnnb
