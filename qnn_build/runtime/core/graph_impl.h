// The graph behind the C API's opaque qnnb_graph, shared by the compose/finalize/execute entry
// points (api.cpp), finalize's last half (bind.cpp) and the context binary's writer and reader.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph.h"
#include "prepared.h"

#if defined(_WIN32)
#include <malloc.h>
#endif

#define QNNB_RUNTIME_VERSION "0.1.0"

namespace qnnb {
// 64-byte aligned memory of at least n bytes (64 for n = 0), rounded up to a multiple of 64.
inline void* aligned_alloc64(size_t n) {
    size_t rounded = (n + 63) / 64 * 64;
#if defined(_WIN32)  // the Windows C runtime has no aligned_alloc
    return _aligned_malloc(rounded ? rounded : 64, 64);
#else
    return std::aligned_alloc(64, rounded ? rounded : 64);
#endif
}
// Frees aligned_alloc64's memory (the Windows C runtime frees aligned blocks with its own call).
inline void aligned_free64(void* p) {
#if defined(_WIN32)
    _aligned_free(p);
#else
    std::free(p);
#endif
}
}  // namespace qnnb

struct qnnb_graph {
    const qnnb::Backend* backend = nullptr;
    std::vector<std::unique_ptr<qnnb::Tensor>> tensors;
    std::vector<std::unique_ptr<qnnb::Node>> nodes;
    std::vector<qnnb::Tensor*> inputs;
    std::vector<qnnb::Tensor*> outputs;
    std::vector<void*> buffers;  // activation memory, freed with the graph
    std::vector<std::vector<float>> dequantized;  // float copies of quantized constants (float backends)
    std::vector<void*> input_copies;              // per input: its rounded copy when it is encoded
    std::vector<qnnb_dtype> input_dtypes;         // inputs' dtypes as the caller sees them
    std::vector<qnnb_dtype> output_dtypes;        // outputs' dtypes as the caller sees them
    std::vector<int64_t> arena_offsets;           // per tensor: its offset in the arena, -1 outside it
    std::vector<std::pair<const qnnb::Tensor*, int64_t>> held_to;  // tensors the plan keeps alive to a node
    size_t arena_bytes = 0;                       // the one activation arena (memory plan)
    size_t tensor_bytes = 0;                      // the planned activations' sizes, summed
    size_t scratch_bytes = 0;                     // kernels' shared scratch: the largest node's (bind)
    std::shared_ptr<void> context_data;           // a loaded context binary: constants point into it
    qnnb::PreparedArrays prepared;                // kernels' tables, computed or from the context
    bool keep_tensors = false;
    bool native_inputs = false, native_outputs = false;  // io of an integer encoding as its codes
    int profiling = QNNB_PROFILING_OFF;
    std::vector<uint64_t> node_ns;                // per node: its time in the last detailed execute
    qnnb::ExecContext ctx;
    bool finalized = false;
    std::string last_error;

    ~qnnb_graph() {
        nodes.clear();  // kernel states before the memory they may point into
        for (void* b : buffers) qnnb::aligned_free64(b);
    }
    qnnb_status fail(qnnb_status status, const std::string& message) {
        last_error = message;
        return status;
    }
};

namespace qnnb {

// Activations rounded after the node that writes them: every encoded float activation on a float
// backend; fp16 activations on an integer backend (its fp16 storage semantics).
bool rounds_activation(const qnnb_graph* g, const Tensor* t);
// Integer-coded activations (the npu), quantized on entry and dequantized on exit by the host.
bool stores_integers(const Tensor* t);

// Finalize after storage is settled (both a composed graph and a loaded context binary): kernels
// found, the memory plan made (unless already loaded) and allocated, kernels prepared.
qnnb_status bind_graph(qnnb_graph* g);

// Fusion (fuse.cpp): on the float backend, Conv/Gemm/MatMul + a following Relu/Clip become one
// node (recorded in its parameters, so a context binary keeps the fused schedule); read_fused sets
// Node::fused from those parameters at bind; run_fused applies it after the node's kernel (unless
// the kernel applied it, Node::fused_in_kernel).
void fuse_activations(qnnb_graph* g);
void read_fused(Node& n);
void run_fused(const Node& n);

// The npu's code chains (npu/code_chain.cpp): elementwise nodes computing a function of one 8-bit
// activation become one table lookup, at the end of bind, on the prepared kernels (not serialized).
// code_chain_roots: each chain's input and the node that will read it, which the memory plan keeps
// it alive to (qnnb_graph::held_to).
namespace npu {
void fold_code_chains(qnnb_graph* g);
void code_chain_roots(const qnnb_graph* g, std::vector<std::pair<const Tensor*, int64_t>>& held);
}

// The memory plan: one arena, each planned activation at a 64-byte aligned offset, tensors whose
// lifetimes (first writer .. last reader in node order) overlap never share bytes. Graph outputs
// and, with keep_tensors, every tensor live to the end. Fills arena_offsets/arena_bytes/tensor_bytes.
void plan_memory(qnnb_graph* g);

}  // namespace qnnb
