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

// erf: x * P(x^2) / Q(x^2) on x clamped to [-4, 4] (Eigen's float erf; within 4.2e-7 relative of
// erf everywhere, 7 ulp; erf(4) rounds to 1 in float).
inline float erf_approx(float x) {
    x = x < -4.f ? -4.f : (x > 4.f ? 4.f : x);
    const float x2 = x * x;
    float p = -2.72614225801306e-10f;
    p = p * x2 + 2.77068142495902e-08f;
    p = p * x2 - 2.10102402082508e-06f;
    p = p * x2 - 5.69250639462346e-05f;
    p = p * x2 - 7.34990630326855e-04f;
    p = p * x2 - 2.95459980854025e-03f;
    p = p * x2 - 1.60960333262415e-02f;
    float q = -1.45660718464996e-05f;
    q = q * x2 - 2.13374055278905e-04f;
    q = q * x2 - 1.68282697438203e-03f;
    q = q * x2 - 7.37332916720468e-03f;
    q = q * x2 - 1.42647390514189e-02f;
    return x * p / q;
}

// x * sigmoid(x): SiLU, what a Sigmoid followed by a Mul of its input computes.
inline float silu_approx(float x) { return x * sigmoid_approx(x); }

}  // namespace qnnb
