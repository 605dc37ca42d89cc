// The context binary's on-disk layout (docs/context-binary.md): a fixed 256-byte header, a section
// table, and 64-byte aligned sections. Little-endian; the writer (ctx_write.cpp) and the reader
// (ctx_read.cpp) share these definitions.
#pragma once

#include <cstdint>
#include <string>

namespace qnnb {

constexpr char kCtxMagic[8] = {'Q', 'N', 'N', 'B', 'C', 'T', 'X', '\0'};
constexpr uint32_t kCtxFormatVersion = 2;  // 2: XXH3-64 checksum (1: XXH64)
constexpr uint64_t kCtxAlign = 64;
constexpr uint32_t kCtxMaxSections = 8;

struct CtxHeader {
    char magic[8];
    uint32_t format_version;
    uint32_t header_size;      // sizeof(CtxHeader)
    uint64_t checksum;         // XXH3-64 of bytes [kCtxChecksummedFrom, file_size)
    uint64_t file_size;
    char backend[16];          // "cpu", "npu": NUL-padded
    char backend_version[16];  // the runtime's version (kernel states are versioned with it)
    char target[96];           // ISA/ABI, e.g. "x86_64-linux+avx2+fma+avx512vnni"
    uint32_t section_count;
    uint32_t reserved0;
    uint8_t reserved[88];      // zero
};
static_assert(sizeof(CtxHeader) == 256, "the context header is 256 bytes on disk");
constexpr uint64_t kCtxChecksummedFrom = 24;  // everything after the checksum field

struct CtxSection {
    uint32_t id;
    uint32_t reserved;
    uint64_t offset;  // from the start of the file, a multiple of kCtxAlign
    uint64_t size;
};
static_assert(sizeof(CtxSection) == 24, "a section table entry is 24 bytes on disk");

// The prepared section: {uint32 count, uint32 reserved}, `count` of these sorted by (node, slot)
// without repeats, then the arrays; offsets from the section's start, each a multiple of kCtxAlign.
struct CtxPrepared {
    uint32_t node;  // index in the schedule
    uint32_t slot;  // the kernel's number for the array
    uint64_t offset;
    uint64_t size;
};
static_assert(sizeof(CtxPrepared) == 24, "a prepared-array entry is 24 bytes on disk");

enum CtxSectionId : uint32_t {
    kSectionGraph = 1,  // tensors, nodes (the schedule), graph inputs/outputs
    kSectionPlan = 2,   // the memory plan: arena size, per-tensor offsets
    kSectionData = 3,   // constants in their finalized storage, each 64-byte aligned
    kSectionPrepared = 4,  // optional: kernels' prepared arrays (core/prepared.h), each 64-byte aligned
};

const char* section_name(uint32_t id);

// This runtime's target: "<arch>-<os>" plus "+feature" for every ISA extension it was compiled
// for. A context is only loaded by a runtime of the same target.
std::string runtime_target();
// The features of `target` this host's CPU lacks (empty: none), separated by '+'.
std::string host_missing_features(const std::string& target);

}  // namespace qnnb
