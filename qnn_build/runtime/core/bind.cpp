// The second half of finalize, shared by a composed graph and a loaded context binary: input
// copies, the memory plan and its one arena, kernels found and prepared. Both paths run exactly
// this on the same finalized graph, so their outputs are the same bytes.
#include "graph_impl.h"

#if defined(_WIN32)
#include <malloc.h>
#endif

namespace qnnb {

void* aligned_alloc64(size_t n) {
    size_t rounded = (n + 63) / 64 * 64;
#if defined(_WIN32)  // the Windows C runtime has no aligned_alloc
    return _aligned_malloc(rounded ? rounded : 64, 64);
#else
    return std::aligned_alloc(64, rounded ? rounded : 64);
#endif
}

bool rounds_activation(const qnnb_graph* g, const Tensor* t) {
    if (!t || t->is_const() || t->dtype != QNNB_FLOAT32 || !t->encoding.present()) return false;
    return g->backend->float_simulation || t->encoding.kind == QNNB_ENCODING_FP16;
}

bool stores_integers(const Tensor* t) {
    return !t->is_const() && (t->dtype == QNNB_UINT8 || t->dtype == QNNB_UINT16) && t->encoding.present();
}

qnnb_status bind_graph(qnnb_graph* g) {
    for (Tensor* t : g->inputs) {
        void* copy = nullptr;
        if (rounds_activation(g, t) || stores_integers(t)) {
            copy = aligned_alloc64(t->nbytes());
            if (!copy) return g->fail(QNNB_ERR_OUT_OF_MEMORY, "out of memory for '" + t->name + "'");
            g->buffers.push_back(copy);
        }
        g->input_copies.push_back(copy);
    }
    if (g->arena_offsets.size() != g->tensors.size()) plan_memory(g);
    char* arena = static_cast<char*>(aligned_alloc64(g->arena_bytes));
    if (!arena) return g->fail(QNNB_ERR_OUT_OF_MEMORY, "out of memory for the activation arena");
    g->buffers.push_back(arena);
    for (size_t i = 0; i < g->tensors.size(); ++i)
        if (g->arena_offsets[i] >= 0) g->tensors[i]->data = arena + g->arena_offsets[i];
    for (auto& node : g->nodes) {
        node->kernel = g->backend->find_kernel(*node);
        if (!node->kernel)
            return g->fail(QNNB_ERR_UNSUPPORTED, "node '" + node->name + "' (" + node->op +
                                                     "): no " + g->backend->name + " kernel for this op" +
                                                     (g->backend->float_simulation ? "" :
                                                      " (convert with --float-fallback to keep such nodes in fp16)"));
        qnnb::read_fused(*node);
        std::string err;
        if (!node->kernel->prepare(*node, err))
            return g->fail(QNNB_ERR_UNSUPPORTED, "node '" + node->name + "' (" + node->op + "): " + err);
    }
    g->finalized = true;
    return QNNB_OK;
}

}  // namespace qnnb
