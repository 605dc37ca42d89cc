// The C API's context entry points: load a context binary from a path (memory-mapped, constants
// used in place) or from memory, then finish it exactly as finalize does (bind.cpp).
#if defined(_WIN32)
#include <cstdio>
#else
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "graph_impl.h"

namespace qnnb {
bool read_context(qnnb_graph* g, const uint8_t* bytes, size_t size, std::string& err);
}

namespace {

qnnb_status load(qnnb_graph* g, const uint8_t* bytes, size_t size) {
    std::string err;
    if (!qnnb::read_context(g, bytes, size, err)) {
        // Leave the graph empty, as before the call.
        g->nodes.clear();
        g->tensors.clear();
        g->inputs.clear();
        g->outputs.clear();
        g->input_dtypes.clear();
        g->output_dtypes.clear();
        g->arena_offsets.clear();
        g->context_data.reset();
        return g->fail(QNNB_ERR_BAD_CONTEXT, "context binary refused: " + err);
    }
    if (g->keep_tensors) g->arena_offsets.clear();  // every tensor its own bytes: plan again
    return qnnb::bind_graph(g);
}

bool ready_for_load(qnnb_graph* g) { return !g->finalized && g->tensors.empty(); }

}  // namespace

extern "C" {

QNNB_EXPORT qnnb_status qnnb_graph_load_context(qnnb_graph* g, const void* data, size_t size) {
    if (!g || (!data && size)) return QNNB_ERR_INVALID_ARGUMENT;
    if (!ready_for_load(g)) return g->fail(QNNB_ERR_STATE, "graph already composed or loaded");
    const uint8_t* bytes = static_cast<const uint8_t*>(data);
    if (reinterpret_cast<uintptr_t>(data) % 64 != 0 && size > 0) {  // kernels expect aligned constants
        void* copy = qnnb::aligned_alloc64(size);
        if (!copy) return g->fail(QNNB_ERR_OUT_OF_MEMORY, "out of memory for the context binary");
        std::memcpy(copy, data, size);
        g->context_data = std::shared_ptr<void>(copy, qnnb::aligned_free64);
        bytes = static_cast<const uint8_t*>(copy);
    }
    return load(g, bytes, size);
}

QNNB_EXPORT qnnb_status qnnb_graph_load_context_file(qnnb_graph* g, const char* path) {
    if (!g || !path) return QNNB_ERR_INVALID_ARGUMENT;
    if (!ready_for_load(g)) return g->fail(QNNB_ERR_STATE, "graph already composed or loaded");
#if defined(_WIN32)
    // No mmap here: read the file into one aligned buffer (constants are used in place from it).
    std::FILE* f = std::fopen(path, "rb");
    if (!f) return g->fail(QNNB_ERR_INVALID_ARGUMENT, std::string(path) + ": " + std::strerror(errno));
    std::fseek(f, 0, SEEK_END);
    long end = std::ftell(f);
    std::fseek(f, 0, SEEK_SET);
    if (end < 0) {
        std::fclose(f);
        return g->fail(QNNB_ERR_INVALID_ARGUMENT, std::string(path) + ": not a regular file");
    }
    size_t size = static_cast<size_t>(end);
    if (size == 0) {
        std::fclose(f);
        return load(g, nullptr, 0);
    }
    void* buffer = qnnb::aligned_alloc64(size);
    if (!buffer) {
        std::fclose(f);
        return g->fail(QNNB_ERR_OUT_OF_MEMORY, "out of memory for the context binary");
    }
    size_t got = std::fread(buffer, 1, size, f);
    std::fclose(f);
    g->context_data = std::shared_ptr<void>(buffer, qnnb::aligned_free64);
    if (got != size) return g->fail(QNNB_ERR_INVALID_ARGUMENT, std::string(path) + ": read failed");
    return load(g, static_cast<const uint8_t*>(buffer), size);
#else
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return g->fail(QNNB_ERR_INVALID_ARGUMENT, std::string(path) + ": " + std::strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return g->fail(QNNB_ERR_INVALID_ARGUMENT, std::string(path) + ": not a regular file");
    }
    size_t size = static_cast<size_t>(st.st_size);
    if (size == 0) {
        close(fd);
        return load(g, nullptr, 0);
    }
    // MAP_POPULATE: the checksum reads every page at once; one call maps them all, no fault per page.
    void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return g->fail(QNNB_ERR_INVALID_ARGUMENT, std::string(path) + ": cannot map: " + std::strerror(errno));
    g->context_data = std::shared_ptr<void>(map, [size](void* p) { munmap(p, size); });
    return load(g, static_cast<const uint8_t*>(map), size);
#endif
}

QNNB_EXPORT qnnb_status qnnb_graph_memory_plan(const qnnb_graph* g, uint64_t* arena_bytes, uint64_t* tensor_bytes) {
    if (!g || !arena_bytes || !tensor_bytes) return QNNB_ERR_INVALID_ARGUMENT;
    if (!g->finalized) return QNNB_ERR_STATE;
    *arena_bytes = g->arena_bytes;
    *tensor_bytes = g->tensor_bytes;
    return QNNB_OK;
}

}  // extern "C"
