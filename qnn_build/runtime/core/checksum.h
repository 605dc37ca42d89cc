// XXH64 (seed 0), the context binary's checksum: the published algorithm, written out here so the
// runtime stays dependency-free. Known value: XXH64("") = 0xEF46DB3751D8E999.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qnnb {

uint64_t xxh64(const void* data, size_t size);

}  // namespace qnnb
