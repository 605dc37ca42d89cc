/* qnnb.h: the qnn-build runtime C API.
 *
 * Worked example: run a model library on the cpu backend.
 *
 *     void* lib = dlopen("libmodel.so", RTLD_NOW);
 *     qnnb_compose_fn compose = (qnnb_compose_fn)dlsym(lib, QNNB_MODEL_COMPOSE_SYMBOL);
 *
 *     qnnb_graph* g = NULL;
 *     if (qnnb_graph_create("cpu", &g) != QNNB_OK) return 1;
 *     if (qnnb_graph_compose(g, compose) != QNNB_OK ||   // the model adds its tensors and nodes
 *         qnnb_graph_finalize(g) != QNNB_OK) {           // kernels chosen, shapes checked, memory planned
 *         fprintf(stderr, "%s\n", qnnb_graph_last_error(g));
 *         qnnb_graph_free(g); return 1;
 *     }
 *     const void* inputs[1] = { image };                  // one host buffer per graph input, in order
 *     void* outputs[1] = { logits };                      // one per graph output, in the output's dtype
 *     qnnb_graph_execute(g, inputs, outputs);
 *     qnnb_graph_free(g);
 *
 * A model library (model.cpp compiled by `qnn-build model-lib`) exports one function,
 * `qnnb_model_compose`, that builds its graph through the `qnnb_compose_api` table it is handed.
 * It links against nothing: the same library composes into any backend.
 *
 * Every call returns a status; nothing aborts. After a failure, qnnb_graph_last_error() says what
 * failed, naming the node or tensor.
 */
#ifndef QNNB_H
#define QNNB_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define QNNB_EXPORT __declspec(dllexport)
#else
#define QNNB_EXPORT __attribute__((visibility("default")))
#endif

/* Bumped when the compose table or the meaning of a call changes. */
#define QNNB_API_VERSION 2

typedef enum {
    QNNB_OK = 0,
    QNNB_ERR_INVALID_ARGUMENT = 1,
    QNNB_ERR_UNSUPPORTED = 2,      /* op, dtype or parameter the backend has no kernel for */
    QNNB_ERR_SHAPE = 3,            /* shapes that do not fit the op */
    QNNB_ERR_OUT_OF_MEMORY = 4,
    QNNB_ERR_STATE = 5,            /* call out of order (execute before finalize, ...) */
    QNNB_ERR_API_VERSION = 6,      /* model library built against another API version */
    QNNB_ERR_BAD_CONTEXT = 7,      /* a context binary failed a check */
    QNNB_ERR_INTERNAL = 8
} qnnb_status;

/* Element types. The codes are ONNX's TensorProto.DataType codes. */
typedef enum {
    QNNB_FLOAT32 = 1,
    QNNB_UINT8 = 2,
    QNNB_INT8 = 3,
    QNNB_UINT16 = 4,
    QNNB_INT16 = 5,
    QNNB_INT32 = 6,
    QNNB_INT64 = 7,
    QNNB_BOOL = 9,     /* one byte, 0 or 1 */
    QNNB_FLOAT16 = 10,
    QNNB_INT4 = 22     /* two per byte, lower index in the low nibble */
} qnnb_dtype;

#define QNNB_MAX_RANK 8

typedef int32_t qnnb_tensor_id;

typedef enum {
    QNNB_PARAM_INTS = 1,
    QNNB_PARAM_FLOATS = 2,
    QNNB_PARAM_STRING = 3
} qnnb_param_kind;

/* One named node parameter: a list of ints, a list of floats, or a string. */
typedef struct {
    const char* name;
    qnnb_param_kind kind;
    int32_t count;          /* elements in ints/floats; ignored for strings */
    const int64_t* ints;
    const float* floats;
    const char* str;
} qnnb_param;

typedef struct qnnb_graph qnnb_graph;

typedef enum {
    QNNB_ENCODING_INT = 0,   /* real = scale * (q + offset), docs/quantization.md (1) */
    QNNB_ENCODING_FP16 = 1   /* values rounded to IEEE half, (9); no scales */
} qnnb_encoding_kind;

/* How a tensor is quantized. Constants hold the integers (dtype INT4/INT8/UINT8/INT16/UINT16/
 * INT32); activations are float32 tensors that carry the encoding of their integer form.
 * Per-channel: `axis` >= 0 and one scale/offset per channel. Block-wise (4-bit weights):
 * `block_axis` >= 0 and `block_size` > 0, scales laid out [channel][block]. */
typedef struct {
    qnnb_encoding_kind kind;
    int32_t bitwidth;
    int32_t is_signed;
    int32_t axis;          /* -1: one scale for the whole tensor */
    int32_t block_axis;    /* -1: no blocks */
    int32_t block_size;
    int32_t count;         /* number of scales (and offsets) */
    const float* scales;
    const int32_t* offsets;
} qnnb_encoding;

/* The calls a model library composes its graph with. `data` of a constant tensor must stay valid
 * while the graph lives (it points into the model library's embedded model.bin). */
typedef struct {
    uint32_t api_version;
    qnnb_status (*add_tensor)(qnnb_graph* graph, const char* name, qnnb_dtype dtype, int32_t rank,
                              const int64_t* dims, const void* data, qnnb_tensor_id* out_id);
    qnnb_status (*add_node)(qnnb_graph* graph, const char* name, const char* op_type,
                            const qnnb_tensor_id* inputs, int32_t num_inputs,
                            const qnnb_tensor_id* outputs, int32_t num_outputs,
                            const qnnb_param* params, int32_t num_params);
    qnnb_status (*set_io)(qnnb_graph* graph, const qnnb_tensor_id* inputs, int32_t num_inputs,
                          const qnnb_tensor_id* outputs, int32_t num_outputs);
    qnnb_status (*set_encoding)(qnnb_graph* graph, qnnb_tensor_id tensor, const qnnb_encoding* encoding);
} qnnb_compose_api;

/* The one entry point a model library exports. */
typedef qnnb_status (*qnnb_compose_fn)(const qnnb_compose_api* api, qnnb_graph* graph);
#define QNNB_MODEL_COMPOSE_SYMBOL "qnnb_model_compose"

/* A tensor id in place of an optional input that is absent. */
#define QNNB_NO_TENSOR (-1)

/* ---- Host API: implemented by the runtime library ---- */

/* backend: "cpu". */
QNNB_EXPORT qnnb_status qnnb_graph_create(const char* backend, qnnb_graph** out_graph);
QNNB_EXPORT void qnnb_graph_free(qnnb_graph* graph);
QNNB_EXPORT qnnb_status qnnb_graph_compose(qnnb_graph* graph, qnnb_compose_fn compose);
QNNB_EXPORT qnnb_status qnnb_graph_set_threads(qnnb_graph* graph, int32_t threads);
QNNB_EXPORT qnnb_status qnnb_graph_finalize(qnnb_graph* graph);
QNNB_EXPORT qnnb_status qnnb_graph_execute(qnnb_graph* graph, const void* const* inputs,
                                           void* const* outputs);

/* Native io, as qnn-net-run's --use_native_input_files / --use_native_output_files: execute then takes
 * (inputs) or returns (outputs) every io tensor with a per-tensor unsigned 8/16-bit encoding as its
 * integer codes (UINT8 / UINT16), real = scale * (code + offset); io without one is unchanged.
 * qnnb_graph_io reports the dtype execute uses, so query it after this call. */
QNNB_EXPORT qnnb_status qnnb_graph_set_native_io(qnnb_graph* graph, int32_t native_inputs,
                                                 int32_t native_outputs);

/* Inputs and outputs, after compose. `dims` must hold QNNB_MAX_RANK entries. */
QNNB_EXPORT int32_t qnnb_graph_num_io(const qnnb_graph* graph, int32_t is_output);
QNNB_EXPORT qnnb_status qnnb_graph_io(const qnnb_graph* graph, int32_t is_output, int32_t index,
                                      const char** name, qnnb_dtype* dtype, int32_t* rank,
                                      int64_t* dims);

/* Inspection, for calibration and debugging: with keep_tensors set before finalize, every tensor
 * keeps its own memory and can be read after execute through qnnb_graph_tensor. */
QNNB_EXPORT qnnb_status qnnb_graph_set_keep_tensors(qnnb_graph* graph, int32_t keep);
QNNB_EXPORT int32_t qnnb_graph_num_tensors(const qnnb_graph* graph);
QNNB_EXPORT qnnb_status qnnb_graph_tensor(const qnnb_graph* graph, int32_t index, const char** name,
                                          qnnb_dtype* dtype, int32_t* rank, int64_t* dims,
                                          const void** data);

/* ---- Profiling (docs/formats.md, profile.json) ----
 * At QNNB_PROFILING_DETAILED every execute times each node of the finalized schedule (its kernel,
 * a fused activation, the rounding of its outputs); the times of the last execute are read with
 * qnnb_graph_node_times. Below that level execute takes no timestamps. The schedule is what
 * finalize made of the composed nodes: an activation fused into its producer is no node of its
 * own (qnnb_graph_node names it as `fused`). May be set at any time, also after finalize. */
typedef enum {
    QNNB_PROFILING_OFF = 0,
    QNNB_PROFILING_BASIC = 1,     /* the caller times whole executes; the runtime records nothing */
    QNNB_PROFILING_DETAILED = 2   /* per node, per execute */
} qnnb_profiling_level;

QNNB_EXPORT qnnb_status qnnb_graph_set_profiling(qnnb_graph* graph, int32_t level);
/* The finalized schedule: its nodes in execution order, each with its op type, the op fused into
 * it ("" when none) and its outputs as indices for qnnb_graph_tensor (-1: an absent output). */
QNNB_EXPORT int32_t qnnb_graph_num_nodes(const qnnb_graph* graph);
QNNB_EXPORT qnnb_status qnnb_graph_node(const qnnb_graph* graph, int32_t index, const char** name,
                                        const char** op_type, const char** fused, int32_t* num_outputs);
QNNB_EXPORT qnnb_status qnnb_graph_node_output(const qnnb_graph* graph, int32_t index, int32_t output,
                                               int32_t* tensor_index);
/* Each node's time in the last execute, in nanoseconds, in schedule order; `count` must be
 * qnnb_graph_num_nodes. QNNB_ERR_STATE unless an execute ran at QNNB_PROFILING_DETAILED. */
QNNB_EXPORT qnnb_status qnnb_graph_node_times(const qnnb_graph* graph, uint64_t* ns, int32_t count);

/* ---- Context binaries (docs/context-binary.md) ----
 * A finalized graph serialized: its schedule, memory plan and constants in finalized storage, for
 * this backend and this runtime's target. Loading one replaces compose + finalize and needs neither
 * the model library nor the source model:
 *
 *     qnnb_graph* g = NULL;
 *     qnnb_graph_create("npu", &g);
 *     if (qnnb_graph_load_context_file(g, "model.ctx") != QNNB_OK)   // ready to execute when OK
 *         fprintf(stderr, "%s\n", qnnb_graph_last_error(g));         // names the check that failed
 *
 * A context of another backend, format version, runtime version or target, a truncated or
 * corrupted file is refused with QNNB_ERR_BAD_CONTEXT. */

/* The finalized graph's context binary in a new buffer (free it with qnnb_buffer_free). */
QNNB_EXPORT qnnb_status qnnb_graph_serialize(qnnb_graph* graph, void** data, size_t* size);
/* The same for another target's runtime (its context target string, "aarch64-linux+neon+dotprod",
 * see docs/targets.md): what a context holds does not depend on the machine that finalized it, only
 * its header names where it may be loaded. NULL: this runtime's own target. */
QNNB_EXPORT qnnb_status qnnb_graph_serialize_for(qnnb_graph* graph, const char* target, void** data,
                                                 size_t* size);
QNNB_EXPORT void qnnb_buffer_free(void* data);
/* Load into a graph fresh from qnnb_graph_create (threads and keep_tensors may be set first).
 * From a file: memory-mapped, constants used in place. From memory: used in place when `data` is
 * 64-byte aligned (it must then outlive the graph), copied otherwise. */
QNNB_EXPORT qnnb_status qnnb_graph_load_context_file(qnnb_graph* graph, const char* path);
QNNB_EXPORT qnnb_status qnnb_graph_load_context(qnnb_graph* graph, const void* data, size_t size);
/* The memory plan of a finalized graph: the one activation arena's bytes, and what the planned
 * activations would take each in its own buffer. */
QNNB_EXPORT qnnb_status qnnb_graph_memory_plan(const qnnb_graph* graph, uint64_t* arena_bytes,
                                               uint64_t* tensor_bytes);
/* The kernels' scratch of a finalized graph: one region, the size of the largest node's working
 * memory, shared by every node because nodes run one at a time. */
QNNB_EXPORT qnnb_status qnnb_graph_scratch_bytes(const qnnb_graph* graph, uint64_t* scratch_bytes);

QNNB_EXPORT const char* qnnb_graph_last_error(const qnnb_graph* graph);
QNNB_EXPORT const char* qnnb_status_string(qnnb_status status);
QNNB_EXPORT const char* qnnb_runtime_version(void);
/* The configs/targets/ name this runtime was built for ("aarch64-windows") and the instruction set
 * it assumes ("armv8.2-a+dotprod"): what a context binary records and checks (docs/targets.md). */
QNNB_EXPORT const char* qnnb_runtime_target(void);
QNNB_EXPORT const char* qnnb_runtime_isa(void);
/* The paths this process takes: the ISA above plus what is chosen at run time for this CPU
 * ("x86-64-v3+avx512vnni" on an AVX-512 VNNI machine; QNNB_ISA=x86-64-v3 in the environment keeps
 * to the baseline). Every path gives the same bytes (docs/targets.md, "Portable x86-64"). */
QNNB_EXPORT const char* qnnb_runtime_paths(void);

#ifdef __cplusplus
}
#endif
#endif /* QNNB_H */
