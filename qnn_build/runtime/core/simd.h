// Explicit vectors for kernels that must vectorise across columns, where the compiler left alone
// may vectorise the wrong loop (a 25-tap depthwise sum became gathers across taps). GCC/Clang
// vector extensions, one register of the build's widest vectors: 16 lanes with AVX-512, 8 on the
// x86-64 baseline (AVX2), 4 elsewhere. A wider type than the registers was no good: GCC lowered a
// 16-lane type on AVX2 through memory, the depthwise rows 10x slower. Lane arithmetic is the scalar
// arithmetic element by element (no fused multiply-add: the runtime is built with -ffp-contract=off),
// so a vector loop gives the bytes of its scalar loop whatever the width.
#pragma once

#include <cstdint>
#include <cstring>

namespace qnnb {

#if defined(__AVX512F__)
constexpr int64_t kF32Lanes = 16;
#elif defined(__AVX__)
constexpr int64_t kF32Lanes = 8;
#else
constexpr int64_t kF32Lanes = 4;
#endif
using f32v = float __attribute__((vector_size(kF32Lanes * sizeof(float))));

inline f32v loadv(const float* p) {
    f32v v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline void storev(float* p, f32v v) { std::memcpy(p, &v, sizeof v); }
inline f32v splatv(float x) { return f32v{} + x; }

}  // namespace qnnb
