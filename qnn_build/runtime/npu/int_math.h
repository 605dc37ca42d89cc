// Exact integer helpers of the normalisation and division kernels (docs/npu.md (N29), (N30), (N33)).
#pragma once

#include <cstdint>

namespace qnnb {
namespace npu {

// floor(a / b) for b > 0.
inline int64_t floor_div(int64_t a, int64_t b) {
    const int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

// floor(sqrt(v)), exactly: one result bit per step.
inline uint64_t isqrt64(uint64_t v) {
    uint64_t r = 0, bit = uint64_t{1} << 62;
    while (bit > v) bit >>= 2;
    while (bit) {
        if (v >= r + bit) {
            v -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
        bit >>= 2;
    }
    return r;
}

}  // namespace npu
}  // namespace qnnb
