// The npu's one requantization primitive: docs/npu.md (N2)-(N3). Round half up, exact in 128-bit
// arithmetic, so no accumulator a kernel produces can overflow it.
#pragma once

#include <cstdint>

namespace qnnb {
namespace npu {

inline int64_t requantize(int64_t acc, int32_t mult, int32_t shift) {
    const int t = 31 + shift;
    const __int128 prod = static_cast<__int128>(acc) * mult;
    if (t <= 0) return static_cast<int64_t>(prod << -t);
    return static_cast<int64_t>((prod + (static_cast<__int128>(1) << (t - 1))) >> t);
}

inline int32_t saturate(int64_t v, int32_t qmax) {
    return v < 0 ? 0 : (v > qmax ? qmax : static_cast<int32_t>(v));
}

// (N3): requantize, add the output zero point, saturate to [0, qmax].
inline int32_t requantize_out(int64_t acc, int32_t mult, int32_t shift, int32_t zp, int32_t qmax) {
    return saturate(requantize(acc, mult, shift) + zp, qmax);
}

}  // namespace npu
}  // namespace qnnb
