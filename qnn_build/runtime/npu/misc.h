// Helpers shared by the movement, pooling, reduction, normalisation and arith kernels
// (docs/npu.md (N20)-(N34)). Integer only.
#pragma once

#include <cstdint>
#include <string>

#include "npu.h"

namespace qnnb {
namespace npu {
namespace misc {

// Same dtype and the same encoding: the codes mean the same values (a move needs no re-encoding).
inline bool same_encoding(const Tensor& a, const Tensor& b) {
    const Encoding &x = a.encoding, &y = b.encoding;
    return a.dtype == b.dtype && x.kind == y.kind && x.bitwidth == y.bitwidth && x.is_signed == y.is_signed &&
           x.scales == y.scales && x.offsets == y.offsets;
}

// (N34): the message for what a kernel cannot honour.
inline std::string refusal(const Node& n, const std::string& what = "") {
    return "no npu kernel for " + n.op + (what.empty() ? std::string() : " with " + what) +
           "; convert with --float-fallback";
}

// The node's convert-time refusal (param npu_unsupported), if any.
inline bool refused(const Node& n, std::string& err) {
    if (!n.params.has("npu_unsupported")) return false;
    err = refusal(n, n.params.s("npu_unsupported"));
    return true;
}

// requantize() of (N2), computed in int64 when that is exact: |acc| < 2^31 and mult < 2^31 keep
// acc * mult + 2^(t-1) below 2^63; a shift t >= 63 of such a value rounds to 0. Bit-identical to
// requantize() for every input.
inline int64_t requantize_fast(int64_t acc, int32_t mult, int32_t shift) {
    const int t = 31 + shift;
    if (t >= 1 && acc > -(int64_t{1} << 31) && acc < (int64_t{1} << 31)) {
        if (t >= 63) return 0;
        return (acc * mult + (int64_t{1} << (t - 1))) >> t;
    }
    return requantize(acc, mult, shift);
}

// (N3) with requantize_fast.
inline int32_t requantize_out_fast(int64_t acc, int32_t mult, int32_t shift, int32_t zp, int32_t qmax) {
    return saturate(requantize_fast(acc, mult, shift) + zp, qmax);
}

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

// A kernel table entry that only refuses (N34).
inline bool refuse(Node& n, std::string& err) {
    err = refusal(n);
    return false;
}
inline void run_nothing(Node&, const ExecContext&) {}

}  // namespace misc
}  // namespace npu
}  // namespace qnnb
