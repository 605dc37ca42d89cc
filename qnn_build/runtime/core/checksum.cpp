#include "checksum.h"

// Inlined into this one translation unit: no separate library, and no xxHash symbol is exported.
#define XXH_INLINE_ALL
#include "../third_party/xxhash/xxhash.h"

namespace qnnb {

uint64_t xxh3_64(const void* data, size_t size) { return XXH3_64bits(data, size); }

}  // namespace qnnb
