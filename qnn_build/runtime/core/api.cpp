// The C API: a graph is composed through the table handed to the model library, finalized (kernels
// found and prepared, memory allocated) and executed. Every entry point returns a status.
#include <chrono>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "gemm.h"
#include "graph_impl.h"
#include "isa.h"
#include "quant.h"

namespace {

using qnnb::Node;
using qnnb::Tensor;
using qnnb::rounds_activation;
using qnnb::stores_integers;

Tensor* tensor_at(qnnb_graph* g, qnnb_tensor_id id) {
    if (id < 0 || static_cast<size_t>(id) >= g->tensors.size()) return nullptr;
    return g->tensors[static_cast<size_t>(id)].get();
}

qnnb_status add_tensor(qnnb_graph* g, const char* name, qnnb_dtype dtype, int32_t rank,
                       const int64_t* dims, const void* data, qnnb_tensor_id* out_id) {
    if (!g || !name || !out_id || rank < 0 || rank > QNNB_MAX_RANK || (rank > 0 && !dims))
        return g ? g->fail(QNNB_ERR_INVALID_ARGUMENT, "add_tensor: invalid argument") : QNNB_ERR_INVALID_ARGUMENT;
    if (g->finalized) return g->fail(QNNB_ERR_STATE, "add_tensor after finalize");
    if (qnnb::dtype_size(dtype) == 0)
        return g->fail(QNNB_ERR_UNSUPPORTED, std::string("tensor '") + name + "': unknown dtype");
    auto t = std::make_unique<Tensor>();
    t->name = name;
    t->dtype = dtype;
    for (int32_t i = 0; i < rank; ++i) {
        if (dims[i] < 0)
            return g->fail(QNNB_ERR_SHAPE, std::string("tensor '") + name + "': negative dimension");
        t->shape.push_back(dims[i]);
    }
    t->const_data = data;
    *out_id = static_cast<qnnb_tensor_id>(g->tensors.size());
    g->tensors.push_back(std::move(t));
    return QNNB_OK;
}

qnnb_status add_node(qnnb_graph* g, const char* name, const char* op_type,
                     const qnnb_tensor_id* inputs, int32_t num_inputs,
                     const qnnb_tensor_id* outputs, int32_t num_outputs,
                     const qnnb_param* params, int32_t num_params) {
    if (!g || !name || !op_type || num_inputs < 0 || num_outputs < 1 || num_params < 0)
        return g ? g->fail(QNNB_ERR_INVALID_ARGUMENT, "add_node: invalid argument") : QNNB_ERR_INVALID_ARGUMENT;
    if (g->finalized) return g->fail(QNNB_ERR_STATE, "add_node after finalize");
    auto node = std::make_unique<Node>();
    node->name = name;
    node->op = op_type;
    for (int32_t i = 0; i < num_inputs; ++i) {
        Tensor* t = inputs[i] == QNNB_NO_TENSOR ? nullptr : tensor_at(g, inputs[i]);
        if (inputs[i] != QNNB_NO_TENSOR && !t)
            return g->fail(QNNB_ERR_INVALID_ARGUMENT, std::string("node '") + name + "': unknown input tensor id");
        node->in.push_back(t);
    }
    for (int32_t i = 0; i < num_outputs; ++i) {
        Tensor* t = outputs[i] == QNNB_NO_TENSOR ? nullptr : tensor_at(g, outputs[i]);
        if (outputs[i] != QNNB_NO_TENSOR && (!t || t->is_const()))
            return g->fail(QNNB_ERR_INVALID_ARGUMENT, std::string("node '") + name + "': bad output tensor");
        node->out.push_back(t);
    }
    for (int32_t i = 0; i < num_params; ++i) {
        const qnnb_param& p = params[i];
        qnnb::Param v;
        v.kind = p.kind;
        if (!p.name || p.count < 0)
            return g->fail(QNNB_ERR_INVALID_ARGUMENT, std::string("node '") + name + "': bad parameter");
        if (p.kind == QNNB_PARAM_INTS && p.count > 0) v.ints.assign(p.ints, p.ints + p.count);
        else if (p.kind == QNNB_PARAM_FLOATS && p.count > 0) v.floats.assign(p.floats, p.floats + p.count);
        else if (p.kind == QNNB_PARAM_STRING && p.str) v.str = p.str;
        node->params.set(p.name, std::move(v));
    }
    g->nodes.push_back(std::move(node));
    return QNNB_OK;
}

qnnb_status set_io(qnnb_graph* g, const qnnb_tensor_id* inputs, int32_t num_inputs,
                   const qnnb_tensor_id* outputs, int32_t num_outputs) {
    if (!g || num_inputs < 0 || num_outputs < 1) return QNNB_ERR_INVALID_ARGUMENT;
    g->inputs.clear();
    g->outputs.clear();
    for (int32_t i = 0; i < num_inputs; ++i) {
        Tensor* t = tensor_at(g, inputs[i]);
        if (!t || t->is_const()) return g->fail(QNNB_ERR_INVALID_ARGUMENT, "set_io: bad input tensor");
        g->inputs.push_back(t);
    }
    for (int32_t i = 0; i < num_outputs; ++i) {
        Tensor* t = tensor_at(g, outputs[i]);
        if (!t) return g->fail(QNNB_ERR_INVALID_ARGUMENT, "set_io: bad output tensor");
        g->outputs.push_back(t);
    }
    return QNNB_OK;
}

qnnb_status set_encoding(qnnb_graph* g, qnnb_tensor_id id, const qnnb_encoding* e) {
    Tensor* t = g ? tensor_at(g, id) : nullptr;
    if (!t || !e || e->count < 0 || (e->count > 0 && (!e->scales || !e->offsets)))
        return g ? g->fail(QNNB_ERR_INVALID_ARGUMENT, "set_encoding: invalid argument") : QNNB_ERR_INVALID_ARGUMENT;
    qnnb::Encoding& enc = t->encoding;
    enc.kind = e->kind;
    enc.bitwidth = e->kind == QNNB_ENCODING_FP16 ? 16 : e->bitwidth;
    enc.is_signed = e->is_signed != 0;
    enc.axis = e->axis;
    enc.block_axis = e->block_axis;
    enc.block_size = e->block_size;
    enc.scales.assign(e->scales, e->scales + e->count);
    enc.offsets.assign(e->offsets, e->offsets + e->count);
    std::string err;
    if (!qnnb::check_encoding(*t, err))
        return g->fail(QNNB_ERR_INVALID_ARGUMENT, "tensor '" + t->name + "': " + err);
    return QNNB_OK;
}

const qnnb_compose_api kComposeApi = {QNNB_API_VERSION, add_tensor, add_node, set_io, set_encoding};

bool is_integer_storage(qnnb_dtype d) {
    return d == QNNB_INT4 || d == QNNB_INT8 || d == QNNB_UINT8 || d == QNNB_INT16 || d == QNNB_UINT16 ||
           d == QNNB_INT32;
}

// On a float backend, quantized and half constants become float32 tensors once, here.
qnnb_status dequantize_constants(qnnb_graph* g) {
    for (auto& t : g->tensors) {
        bool quantized = t->encoding.present() && t->encoding.kind == QNNB_ENCODING_INT && is_integer_storage(t->dtype);
        if (!t->is_const() || !(quantized || t->dtype == QNNB_FLOAT16)) continue;
        std::vector<float> values;
        std::string err;
        if (!qnnb::dequantize_constant(*t, values, err))
            return g->fail(QNNB_ERR_INVALID_ARGUMENT, "tensor '" + t->name + "': " + err);
        g->dequantized.push_back(std::move(values));
        t->const_data = g->dequantized.back().data();
        t->dtype = QNNB_FLOAT32;
        t->encoding = qnnb::Encoding();
    }
    return QNNB_OK;
}

// On an integer backend: integer-encoded activations are stored as their unsigned integers, half
// constants become float for the fp16 nodes, and a graph with unencoded float activations is refused.
qnnb_status prepare_integer_storage(qnnb_graph* g) {
    for (auto& t : g->tensors) {
        if (t->is_const()) {
            if (t->dtype != QNNB_FLOAT16) continue;
            std::vector<float> values;
            std::string err;
            if (!qnnb::dequantize_constant(*t, values, err)) return g->fail(QNNB_ERR_INVALID_ARGUMENT, err);
            g->dequantized.push_back(std::move(values));
            t->const_data = g->dequantized.back().data();
            t->dtype = QNNB_FLOAT32;
            continue;
        }
        if (t->dtype != QNNB_FLOAT32) continue;
        if (!t->encoding.present())
            return g->fail(QNNB_ERR_UNSUPPORTED, std::string("the ") + g->backend->name + " backend has no fp32 unit: tensor '" +
                                                     t->name + "' has no encoding (convert with --precision fp16 or a quantized precision)");
        if (t->encoding.kind == QNNB_ENCODING_INT) {
            if (t->encoding.bitwidth > 16 || t->encoding.is_signed)
                return g->fail(QNNB_ERR_UNSUPPORTED, "tensor '" + t->name + "': activations must be unsigned 8 or 16 bits");
            t->dtype = t->encoding.bitwidth <= 8 ? QNNB_UINT8 : QNNB_UINT16;
        }
    }
    return QNNB_OK;
}

// One node of the schedule: its kernel, a fused activation, the rounding of its outputs.
void run_node(qnnb_graph* g, Node& node) {
    if (node.folded) return;
    node.kernel->run(node, g->ctx);
    if (node.fused && !node.fused_in_kernel) qnnb::run_fused(node);
    for (Tensor* t : node.out)
        if (rounds_activation(g, t)) qnnb::fake_quantize(t->out<float>(), t->numel(), t->encoding);
}

}  // namespace

extern "C" {

qnnb_status qnnb_graph_create(const char* backend, qnnb_graph** out_graph) {
    if (!backend || !out_graph) return QNNB_ERR_INVALID_ARGUMENT;
    *out_graph = nullptr;
    const qnnb::Backend* b = qnnb::find_backend(backend);
    if (!b) return QNNB_ERR_UNSUPPORTED;
    qnnb_graph* g = new (std::nothrow) qnnb_graph();
    if (!g) return QNNB_ERR_OUT_OF_MEMORY;
    g->backend = b;
    *out_graph = g;
    return QNNB_OK;
}

void qnnb_graph_free(qnnb_graph* graph) { delete graph; }

qnnb_status qnnb_graph_compose(qnnb_graph* g, qnnb_compose_fn compose) {
    if (!g || !compose) return QNNB_ERR_INVALID_ARGUMENT;
    if (g->finalized || !g->tensors.empty()) return g->fail(QNNB_ERR_STATE, "graph already composed");
    qnnb_status s = compose(&kComposeApi, g);
    if (s != QNNB_OK && g->last_error.empty()) g->last_error = "the model's compose function failed";
    return s;
}

qnnb_status qnnb_graph_set_threads(qnnb_graph* g, int32_t threads) {
    if (!g || threads < 1) return QNNB_ERR_INVALID_ARGUMENT;
    g->ctx.threads = threads;
    return QNNB_OK;
}

qnnb_status qnnb_graph_finalize(qnnb_graph* g) {
    if (!g) return QNNB_ERR_INVALID_ARGUMENT;
    if (g->finalized) return g->fail(QNNB_ERR_STATE, "graph already finalized");
    if (g->outputs.empty()) return g->fail(QNNB_ERR_STATE, "graph has no outputs (set_io not called)");
    for (Tensor* t : g->inputs) g->input_dtypes.push_back(t->dtype);  // before storage changes
    for (Tensor* t : g->outputs) g->output_dtypes.push_back(t->dtype);
    qnnb_status s = g->backend->float_simulation ? dequantize_constants(g) : prepare_integer_storage(g);
    if (s != QNNB_OK) return s;
    qnnb::fuse_activations(g);
    return qnnb::bind_graph(g);
}

namespace {

// Native io (qnn-net-run's --use_native_input_files / --use_native_output_files): an io tensor with a
// per-tensor unsigned 8- or 16-bit encoding travels as its integer codes; FLOAT32 when it has none.
qnnb_dtype native_dtype(const Tensor* t) {
    const qnnb::Encoding& e = t->encoding;
    if (!e.present() || e.kind != QNNB_ENCODING_INT || e.is_signed || e.scales.size() != 1) return QNNB_FLOAT32;
    return e.bitwidth <= 8 ? QNNB_UINT8 : e.bitwidth <= 16 ? QNNB_UINT16 : QNNB_FLOAT32;
}

// Codes in, into the input's copy: as they are where the backend stores these codes, else their
// values (1), which the float backend's rounding keeps exactly.
void native_input(Tensor* t, const void* codes, void* copy) {
    if (stores_integers(t) && t->dtype == native_dtype(t)) {
        std::memcpy(copy, codes, t->nbytes());
        return;
    }
    std::vector<float> values(static_cast<size_t>(t->numel()));
    qnnb::dequantize_to(codes, native_dtype(t), t->numel(), t->encoding, values.data());
    if (stores_integers(t)) {
        qnnb::quantize_to(values.data(), t->numel(), t->encoding, copy, t->dtype);
    } else {
        std::memcpy(copy, values.data(), values.size() * sizeof(float));
        qnnb::fake_quantize(static_cast<float*>(copy), t->numel(), t->encoding);
    }
}

// Codes out: the stored integers, or the float output quantized with its encoding (2).
void native_output(const Tensor* t, void* out) {
    const int64_t n = t->numel();
    if (stores_integers(t) && t->dtype == native_dtype(t)) {
        std::memcpy(out, t->read_ptr(), t->nbytes());
    } else if (stores_integers(t)) {
        std::vector<float> values(static_cast<size_t>(n));
        qnnb::dequantize_to(t->read_ptr(), t->dtype, n, t->encoding, values.data());
        qnnb::quantize_to(values.data(), n, t->encoding, out, native_dtype(t));
    } else {
        qnnb::quantize_to(t->in<float>(), n, t->encoding, out, native_dtype(t));
    }
}

}  // namespace

qnnb_status qnnb_graph_set_native_io(qnnb_graph* g, int32_t native_inputs, int32_t native_outputs) {
    if (!g) return QNNB_ERR_INVALID_ARGUMENT;
    g->native_inputs = native_inputs != 0;
    g->native_outputs = native_outputs != 0;
    return QNNB_OK;
}

qnnb_status qnnb_graph_execute(qnnb_graph* g, const void* const* inputs, void* const* outputs) {
    if (!g || (!inputs && !g->inputs.empty()) || !outputs) return QNNB_ERR_INVALID_ARGUMENT;
    if (!g->finalized) return g->fail(QNNB_ERR_STATE, "execute before finalize");
    qnnb::gemm_set_threads(g->ctx.threads);
    for (size_t i = 0; i < g->inputs.size(); ++i) {
        Tensor* t = g->inputs[i];
        if (void* copy = g->input_copies[i]) {
            if (g->native_inputs && native_dtype(t) != QNNB_FLOAT32) {
                native_input(t, inputs[i], copy);
            } else if (stores_integers(t)) {  // the host quantizes the input on entry, (2)
                qnnb::quantize_to(static_cast<const float*>(inputs[i]), t->numel(), t->encoding, copy, t->dtype);
            } else {                   // an encoded input is rounded like any activation
                std::memcpy(copy, inputs[i], t->nbytes());
                qnnb::fake_quantize(static_cast<float*>(copy), t->numel(), t->encoding);
            }
            t->data = copy;
        } else {
            t->data = const_cast<void*>(inputs[i]);
        }
    }
    if (g->profiling == QNNB_PROFILING_DETAILED) {  // the only timestamps execute takes
        using Clock = std::chrono::steady_clock;
        g->node_ns.resize(g->nodes.size());
        for (size_t i = 0; i < g->nodes.size(); ++i) {
            if (g->nodes[i]->folded) {  // computed by a later node's table: not run, no time
                g->node_ns[i] = 0;
                continue;
            }
            const auto t0 = Clock::now();
            run_node(g, *g->nodes[i]);
            g->node_ns[i] = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
        }
    } else {
        for (auto& node : g->nodes) run_node(g, *node);
    }
    for (size_t i = 0; i < g->outputs.size(); ++i) {
        const Tensor* t = g->outputs[i];
        if (g->native_outputs && native_dtype(t) != QNNB_FLOAT32) {
            native_output(t, outputs[i]);
        } else if (stores_integers(t)) {  // the host dequantizes the output on exit, (1)
            qnnb::dequantize_to(t->read_ptr(), t->dtype, t->numel(), t->encoding, static_cast<float*>(outputs[i]));
        } else if (t->dtype == QNNB_FLOAT32 && g->output_dtypes[i] == QNNB_FLOAT16) {  // a dequantized half constant
            const float* src = t->in<float>();
            _Float16* dst = static_cast<_Float16*>(outputs[i]);
            for (int64_t k = 0; k < t->numel(); ++k) dst[k] = static_cast<_Float16>(src[k]);
        } else
            std::memcpy(outputs[i], t->read_ptr(), t->nbytes());
    }
    for (size_t i = 0; i < g->inputs.size(); ++i)
        if (!g->input_copies[i]) g->inputs[i]->data = nullptr;
    return QNNB_OK;
}

qnnb_status qnnb_graph_set_keep_tensors(qnnb_graph* g, int32_t keep) {
    if (!g) return QNNB_ERR_INVALID_ARGUMENT;
    if (g->finalized) return g->fail(QNNB_ERR_STATE, "keep_tensors must be set before finalize");
    g->keep_tensors = keep != 0;
    return QNNB_OK;
}

int32_t qnnb_graph_num_tensors(const qnnb_graph* g) { return g ? static_cast<int32_t>(g->tensors.size()) : -1; }

qnnb_status qnnb_graph_tensor(const qnnb_graph* g, int32_t index, const char** name, qnnb_dtype* dtype,
                              int32_t* rank, int64_t* dims, const void** data) {
    if (!g || index < 0 || static_cast<size_t>(index) >= g->tensors.size()) return QNNB_ERR_INVALID_ARGUMENT;
    const Tensor* t = g->tensors[static_cast<size_t>(index)].get();
    if (name) *name = t->name.c_str();
    if (dtype) *dtype = t->dtype;
    if (rank) *rank = t->rank();
    if (dims)
        for (int i = 0; i < t->rank(); ++i) dims[i] = t->shape[static_cast<size_t>(i)];
    if (data) *data = t->read_ptr();
    return QNNB_OK;
}

int32_t qnnb_graph_num_io(const qnnb_graph* g, int32_t is_output) {
    if (!g) return -1;
    return static_cast<int32_t>(is_output ? g->outputs.size() : g->inputs.size());
}

qnnb_status qnnb_graph_io(const qnnb_graph* g, int32_t is_output, int32_t index, const char** name,
                          qnnb_dtype* dtype, int32_t* rank, int64_t* dims) {
    if (!g || index < 0) return QNNB_ERR_INVALID_ARGUMENT;
    const auto& list = is_output ? g->outputs : g->inputs;
    if (static_cast<size_t>(index) >= list.size()) return QNNB_ERR_INVALID_ARGUMENT;
    const Tensor* t = list[static_cast<size_t>(index)];
    const auto& caller_dtypes = is_output ? g->output_dtypes : g->input_dtypes;  // set at finalize
    if (name) *name = t->name.c_str();
    if (dtype) *dtype = g->finalized ? caller_dtypes[static_cast<size_t>(index)] : t->dtype;
    if (dtype && (is_output ? g->native_outputs : g->native_inputs) && native_dtype(t) != QNNB_FLOAT32)
        *dtype = native_dtype(t);
    if (rank) *rank = t->rank();
    if (dims)
        for (int i = 0; i < t->rank(); ++i) dims[i] = t->shape[static_cast<size_t>(i)];
    return QNNB_OK;
}

const char* qnnb_graph_last_error(const qnnb_graph* g) { return g ? g->last_error.c_str() : "no graph"; }

const char* qnnb_status_string(qnnb_status status) {
    switch (status) {
        case QNNB_OK: return "ok";
        case QNNB_ERR_INVALID_ARGUMENT: return "invalid argument";
        case QNNB_ERR_UNSUPPORTED: return "unsupported";
        case QNNB_ERR_SHAPE: return "shape mismatch";
        case QNNB_ERR_OUT_OF_MEMORY: return "out of memory";
        case QNNB_ERR_STATE: return "call out of order";
        case QNNB_ERR_API_VERSION: return "API version mismatch";
        case QNNB_ERR_BAD_CONTEXT: return "bad context binary";
        case QNNB_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

const char* qnnb_runtime_version(void) { return QNNB_RUNTIME_VERSION; }

// The toolchain defines both from the target file the runtime is built for.
#ifndef QNNB_TARGET_NAME
#define QNNB_TARGET_NAME "unknown"
#endif
#ifndef QNNB_TARGET_ISA
#define QNNB_TARGET_ISA "unknown"
#endif
const char* qnnb_runtime_target(void) { return QNNB_TARGET_NAME; }
const char* qnnb_runtime_isa(void) { return QNNB_TARGET_ISA; }
const char* qnnb_runtime_paths(void) { return qnnb::active_isa_name(); }

}  // extern "C"
