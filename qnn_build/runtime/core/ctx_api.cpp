// The C API's context entry points: load a context binary from a path (read or memory-mapped,
// constants used in place) or from memory, then finish it exactly as finalize does (bind.cpp).
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
        g->prepared.clear();
        g->context_data.reset();
        return g->fail(QNNB_ERR_BAD_CONTEXT, "context binary refused: " + err);
    }
    if (g->keep_tensors) g->arena_offsets.clear();  // every tensor its own bytes: plan again
    return qnnb::bind_graph(g);
}

bool ready_for_load(qnnb_graph* g) { return !g->finalized && g->tensors.empty(); }

// Files from this size on are memory-mapped; smaller ones are read whole into one aligned buffer.
// Either way the constants are used in place, never copied per tensor. Below it, one read()
// measured 2.5-3x faster than mmap + munmap here: mapping a few hundred KiB costs more page-table
// work than copying them (docs/context-binary.md, "Loading").
constexpr size_t kMapFrom = size_t(4) << 20;

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
    // No mmap here: the whole file is read into one aligned buffer (constants are used in place).
    std::FILE* f = std::fopen(path, "rb");
    if (!f) return g->fail(QNNB_ERR_INVALID_ARGUMENT, std::string(path) + ": " + std::strerror(errno));
    std::fseek(f, 0, SEEK_END);
    long end = std::ftell(f);
    std::fseek(f, 0, SEEK_SET);
    if (end < 0) {
        std::fclose(f);
        return g->fail(QNNB_ERR_INVALID_ARGUMENT, std::string(path) + ": not a regular file");
    }
    const size_t size = static_cast<size_t>(end);
    auto read_into = [f](void* buffer, size_t n) { return std::fread(buffer, 1, n, f) == n; };
    auto done = [f] { std::fclose(f); };
#else
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return g->fail(QNNB_ERR_INVALID_ARGUMENT, std::string(path) + ": " + std::strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return g->fail(QNNB_ERR_INVALID_ARGUMENT, std::string(path) + ": not a regular file");
    }
    const size_t size = static_cast<size_t>(st.st_size);
    if (size >= kMapFrom) {
        // Pages come in on first touch (the checksum's pass), a few per fault: measured faster
        // than MAP_POPULATE's walk. The constants are used in place from the mapping.
        void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
        close(fd);
        if (map == MAP_FAILED)
            return g->fail(QNNB_ERR_INVALID_ARGUMENT, std::string(path) + ": cannot map: " + std::strerror(errno));
        g->context_data = std::shared_ptr<void>(map, [size](void* p) { munmap(p, size); });
        return load(g, static_cast<const uint8_t*>(map), size);
    }
    auto read_into = [fd](void* buffer, size_t n) {
        for (char* p = static_cast<char*>(buffer); n > 0;) {
            ssize_t got = read(fd, p, n);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) return false;
            p += got;
            n -= static_cast<size_t>(got);
        }
        return true;
    };
    auto done = [fd] { close(fd); };
#endif
    if (size == 0) {
        done();
        return load(g, nullptr, 0);
    }
    void* buffer = qnnb::aligned_alloc64(size);
    if (!buffer) {
        done();
        return g->fail(QNNB_ERR_OUT_OF_MEMORY, "out of memory for the context binary");
    }
    g->context_data = std::shared_ptr<void>(buffer, qnnb::aligned_free64);
    const bool ok = read_into(buffer, size);
    done();
    if (!ok) return g->fail(QNNB_ERR_INVALID_ARGUMENT, std::string(path) + ": read failed");
    return load(g, static_cast<const uint8_t*>(buffer), size);
}

QNNB_EXPORT qnnb_status qnnb_graph_memory_plan(const qnnb_graph* g, uint64_t* arena_bytes, uint64_t* tensor_bytes) {
    if (!g || !arena_bytes || !tensor_bytes) return QNNB_ERR_INVALID_ARGUMENT;
    if (!g->finalized) return QNNB_ERR_STATE;
    *arena_bytes = g->arena_bytes;
    *tensor_bytes = g->tensor_bytes;
    return QNNB_OK;
}

QNNB_EXPORT qnnb_status qnnb_graph_scratch_bytes(const qnnb_graph* g, uint64_t* scratch_bytes) {
    if (!g || !scratch_bytes) return QNNB_ERR_INVALID_ARGUMENT;
    if (!g->finalized) return QNNB_ERR_STATE;
    *scratch_bytes = g->scratch_bytes;
    return QNNB_OK;
}

}  // extern "C"
