// Shared by the npu kernels: reading integer tensors whatever their storage, zero points, and
// calling a kernel body with the element types of its operands. Semantics: docs/npu.md.
#pragma once

#include <cstdint>
#include <string>

#include "../core/graph.h"
#include "requantize.h"

namespace qnnb {
namespace npu {

// The integer zero point of a tensor (zp = -offset; 0 for symmetric constants).
inline int32_t zero_point(const Tensor& t) { return t.encoding.present() ? -t.encoding.offsets[0] : 0; }
inline int32_t qmax_of(const Tensor& t) { return (1 << t.encoding.bitwidth) - 1; }

// Same dtype and the same encoding: the codes mean the same values (a move needs no re-encoding).
inline bool same_encoding(const Tensor& a, const Tensor& b) {
    const Encoding &x = a.encoding, &y = b.encoding;
    return a.dtype == b.dtype && x.kind == y.kind && x.bitwidth == y.bitwidth && x.is_signed == y.is_signed &&
           x.scales == y.scales && x.offsets == y.offsets;
}

// An integer tensor with a per-tensor encoding: what integer kernels accept as an operand.
bool check_int_operand(const Tensor* t, std::string& err);
// An integer activation output (uint8/uint16).
bool check_int_output(const Tensor* t, std::string& err);

// Calls fn(T{}) with T the C type of an integer dtype (uint8, uint16, int8, int16, int32).
template <class Fn>
void with_int_type(qnnb_dtype dtype, Fn fn) {
    switch (dtype) {
        case QNNB_UINT8: fn(uint8_t{}); break;
        case QNNB_UINT16: fn(uint16_t{}); break;
        case QNNB_INT8: fn(int8_t{}); break;
        case QNNB_INT16: fn(int16_t{}); break;
        default: fn(int32_t{}); break;
    }
}

// A node parameter that must be present, as int32s (convert writes npu_* params).
bool int_params(const Node& n, const char* name, size_t count, int32_t* out, std::string& err);

}  // namespace npu
}  // namespace qnnb
