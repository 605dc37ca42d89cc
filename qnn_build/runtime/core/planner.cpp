// The arena planner (graph_impl.h: plan_memory). Greedy by size, first fit: the largest tensors
// are placed first at the lowest offset that overlaps no placed tensor alive at the same time.
// Deterministic: ties are broken by tensor index, so the same graph gives the same plan.
#include <algorithm>

#include "graph_impl.h"

namespace qnnb {

namespace {

struct Interval {
    size_t tensor;
    int64_t first, last;  // node indices: written at `first`, last read at `last`
    size_t size;          // 64-byte rounded
    int64_t offset = -1;
};

size_t round64(size_t n) { return (n + 63) / 64 * 64; }

}  // namespace

void plan_memory(qnnb_graph* g) {
    const size_t n_tensors = g->tensors.size();
    std::vector<int64_t> index_of(n_tensors, -1);  // tensor -> position in `live`
    std::vector<Interval> live;
    // Tensor pointer -> index (graphs have thousands of tensors at most).
    std::vector<std::pair<const Tensor*, size_t>> by_ptr;
    for (size_t i = 0; i < n_tensors; ++i) by_ptr.emplace_back(g->tensors[i].get(), i);
    std::sort(by_ptr.begin(), by_ptr.end());
    auto find = [&](const Tensor* t) {
        return std::lower_bound(by_ptr.begin(), by_ptr.end(), std::make_pair(t, size_t(0)))->second;
    };
    const int64_t end = static_cast<int64_t>(g->nodes.size());
    for (int64_t k = 0; k < end; ++k) {
        const Node& node = *g->nodes[static_cast<size_t>(k)];
        for (const Tensor* t : node.out) {
            if (!t || t->is_const()) continue;
            size_t id = find(t);
            if (index_of[id] >= 0) continue;  // written twice: keep the first writer
            index_of[id] = static_cast<int64_t>(live.size());
            live.push_back({id, k, g->keep_tensors ? end : k, round64(t->nbytes())});
        }
        for (const Tensor* t : node.in) {
            if (!t || t->is_const()) continue;
            int64_t pos = index_of[find(t)];
            if (pos >= 0) live[static_cast<size_t>(pos)].last = std::max(live[static_cast<size_t>(pos)].last, k);
        }
    }
    for (const Tensor* t : g->outputs) {
        int64_t pos = t ? index_of[find(t)] : -1;
        if (pos >= 0) live[static_cast<size_t>(pos)].last = end;
    }
    for (const auto& [t, k] : g->held_to) {  // the npu's folded chains read their input late
        int64_t pos = index_of[find(t)];
        if (pos >= 0) live[static_cast<size_t>(pos)].last = std::max(live[static_cast<size_t>(pos)].last, k);
    }
    std::vector<size_t> order(live.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return live[a].size > live[b].size; });
    std::vector<size_t> placed;
    size_t arena = 0, total = 0;
    for (size_t i : order) {
        Interval& cur = live[i];
        // Candidate offsets: 0 and the end of every placed tensor alive at the same time.
        std::vector<std::pair<int64_t, int64_t>> busy;
        for (size_t j : placed) {
            const Interval& o = live[j];
            if (o.first <= cur.last && cur.first <= o.last)
                busy.emplace_back(o.offset, o.offset + static_cast<int64_t>(o.size));
        }
        std::sort(busy.begin(), busy.end());
        int64_t offset = 0;
        for (const auto& b : busy) {
            if (offset + static_cast<int64_t>(cur.size) <= b.first) break;
            offset = std::max(offset, b.second);
        }
        cur.offset = offset;
        placed.push_back(i);
        arena = std::max(arena, static_cast<size_t>(offset) + cur.size);
        total += cur.size;
    }
    g->arena_offsets.assign(n_tensors, -1);
    for (const Interval& iv : live) g->arena_offsets[iv.tensor] = iv.offset;
    g->arena_bytes = arena;
    g->tensor_bytes = total;
}

}  // namespace qnnb
