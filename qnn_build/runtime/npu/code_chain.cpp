// Code chains (docs/npu.md (N16)): elementwise nodes whose output is a function of one 8-bit
// activation's code, through other such nodes and one-element constants, run as one table lookup.
// HardSwish written out as x · Clip(x + 3, 0, 6) / 6 is four passes over the tensor and a Mul of
// two activations; folded, it is one pass of y[i] = table[x[i]].
//
// The table is the chain's own kernels run once at finalize on an input holding every code
// (x[i] = i mod 256), so each entry is the byte those kernels give for that code: folding cannot
// change an output. The nodes stay in the schedule (a context binary stores the same graph, and its
// load folds it again); the inner ones are marked `folded` and not run, the last one of a chain runs
// the lookup from the chain's input.
#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "../core/graph_impl.h"
#include "code_table.h"

namespace qnnb {
namespace npu {
extern const KernelTable kNpuLutKernels;  // lut.cpp: every lookup-table op

namespace {

bool elementwise_op(const std::string& op) {
    static const std::set<std::string> ops = [] {
        std::set<std::string> s = {"Add", "Sub", "Mul", "Div", "Min", "Max", "Pow"};
        for (size_t i = 0; i < kNpuLutKernels.count; ++i) s.insert(kNpuLutKernels.kernels[i].op);
        return s;
    }();
    return ops.count(op) != 0;
}

bool is_code(const Tensor* t) { return t && !t->is_const() && stores_integers(t); }

struct FoldedTable {
    const Tensor* root = nullptr;
    std::vector<int32_t> table;  // 256 output codes
    // The output's bytes partly overlap the root's (the memory plan reused them after the root's last
    // reader): the root is copied here first. An output on exactly the root's bytes is looked up in place.
    std::unique_ptr<Tensor> staged;
    std::vector<uint8_t> staged_bytes;
};

void run_folded(Node& n, const ExecContext& ctx) {
    const FoldedTable& f = n.state_as<FoldedTable>();
    if (f.staged) {
        std::memcpy(f.staged->data, f.root->read_ptr(), f.root->nbytes());
        apply_code_table(*f.staged, *n.out[0], f.table.data(), ctx);
    } else {
        apply_code_table(*f.root, *n.out[0], f.table.data(), ctx);
    }
}

const Kernel kFoldedKernel = {"CodeChain", nullptr, run_folded};

bool overlaps(const Tensor* a, const Tensor* b) {
    const char *pa = static_cast<const char*>(a->data), *pb = static_cast<const char*>(b->data);
    return pa < pb + b->nbytes() && pb < pa + a->nbytes();
}

struct Chain {
    size_t end;
    const Tensor* root;
    std::set<size_t> nodes;  // in schedule order, `end` last
    bool folds = true;
};

// The graph's chains of two nodes or more, and which nodes are inner (their outputs only feed chains
// of the same root). Structure only: the same before the memory plan and after bind.
std::vector<Chain> find_chains(const qnnb_graph* g, std::vector<char>& is_inner) {
    const size_t count = g->nodes.size();
    is_inner.assign(count, 0);
    if (g->backend->float_simulation || g->keep_tensors) return {};
    std::map<const Tensor*, std::vector<size_t>> readers;
    for (size_t i = 0; i < count; ++i)
        for (const Tensor* t : g->nodes[i]->in)
            if (t) readers[t].push_back(i);
    std::set<const Tensor*> outputs(g->outputs.begin(), g->outputs.end());
    // root[i]: the 8-bit activation node i's output is a function of, or null.
    std::vector<const Tensor*> root(count, nullptr);
    std::map<const Tensor*, size_t> producer;
    for (size_t i = 0; i < count; ++i) {
        const Node& n = *g->nodes[i];
        for (const Tensor* t : n.out)
            if (t) producer[t] = i;
        if (!elementwise_op(n.op) || n.out.size() != 1 || !is_code(n.out[0])) continue;
        const Tensor* r = nullptr;
        bool ok = true;
        for (const Tensor* t : n.in) {
            if (!t) continue;
            if (t->is_const()) {
                ok = ok && t->numel() == 1;
                continue;
            }
            const auto p = producer.find(t);
            const Tensor* tr = p != producer.end() && root[p->second] ? root[p->second] : t;
            ok = ok && t->numel() == n.out[0]->numel() && tr->dtype == QNNB_UINT8 && is_code(tr) && (!r || r == tr);
            r = tr;
        }
        if (ok && r && r->numel() >= 256) root[i] = r;
    }
    for (size_t i = 0; i < count; ++i) {
        const Tensor* y = g->nodes[i]->out.empty() ? nullptr : g->nodes[i]->out[0];
        if (!root[i] || outputs.count(y) || readers[y].empty()) continue;
        is_inner[i] = 1;
        for (size_t r : readers[y]) is_inner[i] = is_inner[i] && root[r] == root[i];
    }
    std::vector<Chain> chains;
    for (size_t e = 0; e < count; ++e) {
        if (!root[e] || is_inner[e]) continue;
        // The chain's nodes: e and, backwards, the producers of its inputs up to the root.
        Chain c{e, root[e], {e}};
        std::vector<size_t> todo = {e};
        while (!todo.empty()) {
            const size_t i = todo.back();
            todo.pop_back();
            for (const Tensor* t : g->nodes[i]->in) {
                if (!t || t->is_const() || t == root[e]) continue;
                const size_t p = producer.at(t);
                if (c.nodes.insert(p).second) todo.push_back(p);
            }
        }
        if (c.nodes.size() >= 2) chains.push_back(std::move(c));  // one op on the root is a table already
    }
    return chains;
}

}  // namespace

void code_chain_roots(const qnnb_graph* g, std::vector<std::pair<const Tensor*, int64_t>>& held) {
    std::vector<char> is_inner;
    for (const Chain& c : find_chains(g, is_inner)) held.emplace_back(c.root, static_cast<int64_t>(c.end));
}

void fold_code_chains(qnnb_graph* g) {
    std::vector<char> is_inner;
    std::vector<Chain> chains = find_chains(g, is_inner);
    const size_t count = g->nodes.size();
    // The chain's end reads the root at its place in the schedule: nothing run in between may have
    // written over it. The plan holds a chain's root to its end (planner.cpp); a context binary
    // planned by a runtime that did not may have reused the bytes, and then the chain is not folded.
    for (Chain& c : chains)
        for (size_t i = *c.nodes.begin(); i < c.end && c.folds; ++i)
            for (const Tensor* t : g->nodes[i]->out) c.folds = c.folds && !(t && overlaps(t, c.root));
    // The tables: each folding chain's kernels run once on every code, before any kernel is replaced.
    std::vector<std::shared_ptr<FoldedTable>> tables(chains.size());
    for (size_t c = 0; c < chains.size(); ++c) {
        if (!chains[c].folds) continue;
        Tensor* x = const_cast<Tensor*>(chains[c].root);
        const Tensor* y = g->nodes[chains[c].end]->out[0];
        std::vector<uint8_t> codes(static_cast<size_t>(x->numel()));
        for (size_t k = 0; k < codes.size(); ++k) codes[k] = static_cast<uint8_t>(k);
        void* saved = x->data;
        x->data = codes.data();
        const ExecContext one;
        for (size_t i : chains[c].nodes) g->nodes[i]->kernel->run(*g->nodes[i], one);
        x->data = saved;
        auto& f = tables[c] = std::make_shared<FoldedTable>();
        f->root = x;
        if (overlaps(x, y) && !(x->data == y->data && dtype_size(y->dtype) == 1)) {
            f->staged = std::make_unique<Tensor>(*x);
            f->staged_bytes.resize(x->nbytes());
            f->staged->data = f->staged_bytes.data();
        }
        f->table.resize(256);
        with_int_type(y->dtype, [&](auto ty) {
            const auto* v = y->in<decltype(ty)>();
            for (size_t q = 0; q < 256; ++q) f->table[q] = static_cast<int32_t>(v[q]);
        });
    }
    // Chain ends look their output up; an inner node is left out when every chain it feeds folds.
    std::vector<int> chained(count, 0), unfolded(count, 0);
    for (size_t c = 0; c < chains.size(); ++c) {
        for (size_t i : chains[c].nodes) ++(chains[c].folds ? chained[i] : unfolded[i]);
        if (!chains[c].folds) continue;
        Node& e = *g->nodes[chains[c].end];
        e.kernel = &kFoldedKernel;
        e.state = tables[c];
    }
    for (size_t i = 0; i < count; ++i)
        if (is_inner[i] && chained[i] && !unfolded[i]) g->nodes[i]->folded = true;
}

}  // namespace npu
}  // namespace qnnb
