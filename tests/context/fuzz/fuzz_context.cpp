// Fuzz target for the context-binary reader (libFuzzer's entry point; fuzz_main.cpp drives it when
// libFuzzer is not available). Each input is read twice: as given (the header checks) and with its
// size and checksum made right (so mutations reach the section and record parsers). Whatever is
// accepted is planned and its constants read through, so an out-of-bounds pointer shows under ASan.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "checksum.h"
#include "ctx_format.h"
#include "graph_impl.h"

namespace qnnb {
bool read_context(qnnb_graph* g, const uint8_t* bytes, size_t size, std::string& err);
}

static const qnnb::Backend kBackends[] = {{"cpu", nullptr, true}, {"npu", nullptr, false}};

static uint64_t read_one(const uint8_t* data, size_t size, const qnnb::Backend* backend) {
    qnnb_graph g;
    g.backend = backend;
    std::string err;
    if (!qnnb::read_context(&g, data, size, err)) return err.empty() ? 1 : 0;  // an error must say why
    qnnb::plan_memory(&g);
    uint64_t sum = g.arena_bytes;
    for (const auto& t : g.tensors)
        if (t->is_const()) sum ^= qnnb::xxh3_64(t->const_data, t->nbytes());
    return sum;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::vector<uint8_t> copy(data, data + size);  // exact size: reads past the end are caught
    for (const auto& b : kBackends) read_one(copy.data(), copy.size(), &b);
    if (size >= sizeof(qnnb::CtxHeader)) {
        uint64_t file_size = size;
        std::memcpy(copy.data() + offsetof(qnnb::CtxHeader, file_size), &file_size, 8);
        uint64_t sum = qnnb::xxh3_64(copy.data() + qnnb::kCtxChecksummedFrom, size - qnnb::kCtxChecksummedFrom);
        std::memcpy(copy.data() + offsetof(qnnb::CtxHeader, checksum), &sum, 8);
        for (const auto& b : kBackends) read_one(copy.data(), copy.size(), &b);
    }
    return 0;
}
