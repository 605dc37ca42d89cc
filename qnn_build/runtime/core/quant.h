// Quantized tensors on a float backend: constants dequantized once at finalize, activations
// rounded through their integer form at execute. Equations: docs/quantization.md.
#pragma once

#include <string>
#include <vector>

#include "graph.h"

namespace qnnb {

// Checks an encoding against its tensor (scale count, axes, block size, bitwidth for the dtype).
bool check_encoding(const Tensor& t, std::string& err);

// The float values of a quantized (INT4..INT32 with an encoding) or FLOAT16 constant: (1), (7).
bool dequantize_constant(const Tensor& t, std::vector<float>& out, std::string& err);

// x <- dequantize(quantize(x)) with a per-tensor encoding, (2) then (1); or x <- half(x), (9).
void fake_quantize(float* x, int64_t n, const Encoding& enc);

// Host-side conversions at an integer graph's boundary: float -> stored integers (2), and back (1).
void quantize_to(const float* x, int64_t n, const Encoding& enc, void* out, qnnb_dtype dtype);
void dequantize_to(const void* q, qnnb_dtype dtype, int64_t n, const Encoding& enc, float* out);

}  // namespace qnnb
