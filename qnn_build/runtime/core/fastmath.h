// Branch-free float math that vectorises (libm's expf/tanhf do not without fast-math), shared by the
// cpu kernels (Sigmoid, Tanh, the recurrent gates) and the activations fused into a producer
// (core/fuse.cpp), so a fused activation gives the bytes of its own kernel.
#pragma once

#include <cstdint>
#include <cstring>

namespace qnnb {

// exp(x) without branches or libm calls, so it vectorises (libm's expf does not without fast-math).
// Cephes polynomial on a range-reduced argument; about 2 ulp. Inputs are clamped to [-87, 88].
inline float exp_approx(float x) {
    x = x < -87.f ? -87.f : (x > 88.f ? 88.f : x);
    const float n = (x * 1.44269504089f + 12582912.f) - 12582912.f;  // round to nearest integer
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.f;
    const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, sizeof(scale));
    return p * scale;
}

// tanh: an odd polynomial near 0 (Cephes tanhf, exact to ~1 ulp), 1 - 2/(e^2x + 1) elsewhere.
inline float tanh_approx(float x) {
    const float z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    const float small = p * z * x + x;
    const float large = 1.f - 2.f / (exp_approx(2.f * x) + 1.f);
    return z < 0.390625f ? small : large;  // |x| < 0.625
}

inline float sigmoid_approx(float x) { return 1.f / (1.f + exp_approx(-x)); }

// x * sigmoid(x): SiLU, what a Sigmoid followed by a Mul of its input computes.
inline float silu_approx(float x) { return x * sigmoid_approx(x); }

}  // namespace qnnb
