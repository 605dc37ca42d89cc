// The npu's one requantization primitive, docs/npu.md (N2)-(N3), in its reference form and the fast
// forms the kernels run, side by side. Every fast form returns the reference's integer for every
// input it is given (tests/npu/test_requantize.py holds them equal on the edges and on random
// inputs); none of them is a different rounding.
#pragma once

#include <cstdint>

namespace qnnb {
namespace npu {

// ---- reference ----------------------------------------------------------------------------------

// (N2): round half up, exact in 128-bit arithmetic, so no accumulator a kernel produces can overflow it.
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

// ---- fast: int64 arithmetic where it is exact -----------------------------------------------------

// An accumulator in (−2^31, 2^31): with mult < 2^31 its product is below 2^62 in magnitude, so
// acc · mult + 2^(t−1) fits int64 for 1 <= t <= 62; for t >= 63 the exact sum lies in [0, 2^t) and
// (N2) gives 0.
inline bool fits_int64_requantize(int64_t acc) { return acc > -(int64_t{1} << 31) && acc < (int64_t{1} << 31); }

// requantize() with int64 arithmetic when that is exact, the reference otherwise.
inline int64_t requantize_fast(int64_t acc, int32_t mult, int32_t shift) {
    const int t = 31 + shift;
    if (t >= 1 && fits_int64_requantize(acc)) {
        if (t >= 63) return 0;
        return (acc * mult + (int64_t{1} << (t - 1))) >> t;
    }
    return requantize(acc, mult, shift);
}

// (N3) with requantize_fast.
inline int32_t requantize_out_fast(int64_t acc, int32_t mult, int32_t shift, int32_t zp, int32_t qmax) {
    return saturate(requantize_fast(acc, mult, shift) + zp, qmax);
}

// One (mult, shift) prepared for tight loops and vector lanes: requantize(acc) = (acc · mult + round) >> t
// for every |acc| < 2^31 (fits_int64_requantize), with no branch. A shift t >= 63 becomes mult 0
// (such a product rounds to 0); t <= 0 (refused at convert) has no such form: `exact` is false.
struct Int64Requantize {
    int64_t mult = 0, round = 0, t = 1;
    bool exact = false;

    static Int64Requantize of(int32_t mult, int32_t shift) {
        Int64Requantize r;
        const int64_t t = 31 + static_cast<int64_t>(shift);
        if (t >= 1 && t <= 62) {
            r.mult = mult;
            r.t = t;
            r.round = int64_t{1} << (t - 1);
            r.exact = true;
        } else if (t > 62) {
            r.exact = true;  // mult 0, round 0: every in-range product gives 0
        }
        return r;
    }
    int64_t apply(int64_t acc) const { return (acc * mult + round) >> t; }
};

}  // namespace npu
}  // namespace qnnb
