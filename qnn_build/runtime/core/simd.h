// Explicit vectors for kernels that must vectorise across columns, where the compiler left alone
// may vectorise the wrong loop (a 25-tap depthwise sum became gathers across taps). GCC/Clang
// vector extensions: one AVX-512 register here, two AVX2 or four NEON registers elsewhere. Lane
// arithmetic is the scalar arithmetic element by element (no fused multiply-add: the runtime is
// built with -ffp-contract=off), so a vector loop gives the bytes of its scalar loop.
#pragma once

#include <cstdint>
#include <cstring>

namespace qnnb {

constexpr int64_t kF32Lanes = 16;
using f32x16 = float __attribute__((vector_size(64)));

inline f32x16 load16(const float* p) {
    f32x16 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline void store16(float* p, f32x16 v) { std::memcpy(p, &v, sizeof v); }
inline f32x16 splat16(float x) { return f32x16{} + x; }

}  // namespace qnnb
