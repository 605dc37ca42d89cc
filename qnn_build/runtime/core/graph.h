// The runtime's internal graph: tensors, nodes with their parameters, and the kernel contract that
// every backend's op table follows. Nothing here is visible through the C API.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "qnnb.h"

namespace qnnb {

size_t dtype_size(qnnb_dtype dtype);  // 0 for an unknown dtype
const char* dtype_name(qnnb_dtype dtype);

// A tensor's quantization, as composed (see qnnb_encoding).
struct Encoding {
    qnnb_encoding_kind kind = QNNB_ENCODING_INT;
    int bitwidth = 0;  // 0: not encoded
    bool is_signed = false;
    int axis = -1;
    int block_axis = -1;
    int block_size = 0;
    std::vector<float> scales;
    std::vector<int32_t> offsets;

    bool present() const { return bitwidth != 0; }
};

struct Tensor {
    std::string name;
    qnnb_dtype dtype = QNNB_FLOAT32;
    std::vector<int64_t> shape;
    const void* const_data = nullptr;  // constants: points into the model's weights
    void* data = nullptr;              // activations: planned memory, set at finalize/execute
    Encoding encoding;

    bool is_const() const { return const_data != nullptr; }
    int rank() const { return static_cast<int>(shape.size()); }
    int64_t numel() const {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        return n;
    }
    size_t nbytes() const {
        if (dtype == QNNB_INT4) return static_cast<size_t>((numel() + 1) / 2);
        return static_cast<size_t>(numel()) * dtype_size(dtype);
    }
    const void* read_ptr() const { return const_data ? const_data : data; }
    template <class T> const T* in() const { return static_cast<const T*>(read_ptr()); }
    template <class T> T* out() const { return static_cast<T*>(data); }
    int64_t dim(int axis) const { return shape[static_cast<size_t>(axis)]; }
};

struct Param {
    qnnb_param_kind kind = QNNB_PARAM_INTS;
    std::vector<int64_t> ints;
    std::vector<float> floats;
    std::string str;
};

// Named parameters of one node, with defaults for absent ones.
class Params {
public:
    void set(const std::string& name, Param p) { map_[name] = std::move(p); }
    bool has(const std::string& name) const { return map_.count(name) != 0; }
    int64_t i(const std::string& name, int64_t def) const;
    float f(const std::string& name, float def) const;
    std::vector<int64_t> ints(const std::string& name, std::vector<int64_t> def = {}) const;
    std::vector<float> floats(const std::string& name, std::vector<float> def = {}) const;
    std::string s(const std::string& name, const std::string& def = "") const;
    const std::map<std::string, Param>& all() const { return map_; }  // in name order (serialization)

private:
    std::map<std::string, Param> map_;
};

struct ExecContext {
    int threads = 1;
};

struct Node;
class PreparedArrays;

// prepare: runs once at finalize; checks what the kernel supports and precomputes its state.
// Returns false with `err` set for anything it cannot run. run: executes blindly.
using PrepareFn = bool (*)(Node& node, std::string& err);
using RunFn = void (*)(Node& node, const ExecContext& ctx);

struct Kernel {
    const char* op;
    PrepareFn prepare;
    RunFn run;
};

struct KernelTable {
    const Kernel* kernels;
    size_t count;
};

struct Node {
    std::string name;
    std::string op;
    std::vector<Tensor*> in;   // nullptr for an absent optional input
    std::vector<Tensor*> out;  // nullptr for an absent optional output
    Params params;
    const Kernel* kernel = nullptr;
    std::shared_ptr<void> state;  // whatever prepare precomputed
    PreparedArrays* prepared = nullptr;  // the graph's, while prepare runs (core/prepared.h)
    // Working memory the kernel needs only inside `run` (a padded copy of its input, staging rows):
    // prepare asks for it with take_scratch; bind points every node at one shared region, the size
    // of the largest request, since nodes run one at a time. Its contents do not outlive a run.
    size_t scratch_bytes = 0;
    void* scratch = nullptr;
    // An activation fused into this node at finalize (core/fuse.cpp), applied after `run`.
    enum { kFusedNone = 0, kFusedRelu, kFusedClip, kFusedSigmoid, kFusedHardSigmoid, kFusedHardSwish, kFusedSilu };
    int fused = kFusedNone;
    float fused_lo = 0.f, fused_hi = 0.f;  // Clip: its range; HardSigmoid: alpha, beta
    // Set by prepare when the kernel applies `fused` itself (apply_fused on each finished piece of
    // its output, while it is in cache) instead of the graph applying it to the whole output after.
    bool fused_in_kernel = false;
    // Set at bind when a later node computes this one's part by a table (npu/code_chain.cpp): not run.
    bool folded = false;

    Tensor* input(size_t i) const { return i < in.size() ? in[i] : nullptr; }
    Tensor* output(size_t i) const { return i < out.size() ? out[i] : nullptr; }
    template <class S> S& state_as() { return *static_cast<S*>(state.get()); }
    template <class S> S& make_state() {
        auto s = std::make_shared<S>();
        state = s;
        return *s;
    }
};

// Reserves `bytes` of the node's scratch at prepare, 64-byte aligned; returns their offset, which
// run passes to scratch_at.
inline size_t take_scratch(Node& n, size_t bytes) {
    const size_t at = n.scratch_bytes;
    n.scratch_bytes += (bytes + 63) / 64 * 64;
    return at;
}
template <class T> T* scratch_at(const Node& n, size_t offset) {
    return reinterpret_cast<T*>(static_cast<char*>(n.scratch) + offset);
}

// The node's fused activation (core/fuse.cpp) on y[0, count), in place; _avx512: the same loops
// compiled for AVX-512, for callers on an AVX-512 path (core/isa.h), defined on x86-64 only.
void apply_fused(const Node& n, float* y, int64_t count);
void apply_fused_avx512(const Node& n, float* y, int64_t count);

// A backend is a name and a way to find the kernel for an op.
struct Backend {
    const char* name;
    const Kernel* (*find_kernel)(const Node& node);
    // true: quantized graphs run in float (dequantized constants, rounded activations);
    // false: integer encodings are executed as integers (the npu).
    bool float_simulation;
};

// The cpu kernel for an op (the npu runs fp16 nodes on them).
const Kernel* cpu_find_kernel(const std::string& op);

const Backend* find_backend(const std::string& name);

}  // namespace qnnb
