// The context binary's checksum: XXH3-64 (seed 0) from the vendored xxHash (third_party/xxhash,
// BSD-2-Clause), which uses the SIMD units the runtime is compiled for; the value is the same on
// every machine. Known value: xxh3_64("") = 0x2D06800538D394C2.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qnnb {

uint64_t xxh3_64(const void* data, size_t size);

}  // namespace qnnb
