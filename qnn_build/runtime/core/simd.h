// Explicit vectors, two kinds.
//
// f32v: one register of the build's widest vectors, for kernels that must vectorise across columns
// where the compiler left alone may vectorise the wrong loop (a 25-tap depthwise sum became gathers
// across taps): 16 lanes with AVX-512, 8 on the x86-64 baseline (AVX2), 4 elsewhere. A wider type
// than the registers was no good: GCC lowered a 16-lane type on AVX2 through memory, the depthwise
// rows 10x slower. Lane arithmetic is the scalar arithmetic element by element (no fused
// multiply-add: the runtime is built with -ffp-contract=off), so a vector loop gives the bytes of its
// scalar loop whatever the width.
//
// v128, v256, v512: one set of operations per instruction set, for the kernels compiled once per
// set and chosen at run time (gemm/tiles.inc, core/packed_gemm_tiles.inc): kV floats per vector,
// vf, load/store (unaligned), splat, and fmadd(a, b, c) = a * b + c rounded once (v128, for builds
// without FMA: one multiply and one add, the same for every element still). vbase is the build's
// baseline set; v512 is compiled for AVX-512 here and may be used only inside a QNNB_AVX512_BEGIN
// region behind active_isa() (core/isa.h). All of them have internal linkage (an anonymous
// namespace), so no AVX-512 copy of a function can stand in for a baseline caller's.
#pragma once

#include <cstdint>
#include <cstring>

#include "isa.h"

#if defined(__FMA__)
#include <immintrin.h>
#endif

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

namespace {

namespace v128 {
constexpr int kV = 4;
using vf = float __attribute__((vector_size(16)));
inline vf fmadd(vf a, vf b, vf c) { return a * b + c; }  // two roundings: the build forbids contraction
inline vf splat(float x) { return vf{x, x, x, x}; }  // not 0 + x, which makes -0 +0
inline vf load(const float* p) {
    vf v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline void store(float* p, vf v) { std::memcpy(p, &v, sizeof v); }
}  // namespace v128

#if defined(__FMA__)
namespace v256 {
constexpr int kV = 8;
using vf = float __attribute__((vector_size(32)));
inline vf fmadd(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
inline vf splat(float x) { return _mm256_set1_ps(x); }
inline vf load(const float* p) {
    vf v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline void store(float* p, vf v) { std::memcpy(p, &v, sizeof v); }
}  // namespace v256
namespace vbase = v256;
#else
namespace vbase = v128;
#endif

}  // namespace

#if QNNB_HAS_AVX512_PATHS && defined(__FMA__)
#define QNNB_SIMD_V512 1
QNNB_AVX512_BEGIN
namespace {
namespace v512 {
constexpr int kV = 16;
using vf = float __attribute__((vector_size(64)));
inline vf fmadd(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
inline vf splat(float x) { return _mm512_set1_ps(x); }
inline vf load(const float* p) {
    vf v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline void store(float* p, vf v) { std::memcpy(p, &v, sizeof v); }
}  // namespace v512
}  // namespace
QNNB_AVX512_END
#else
#define QNNB_SIMD_V512 0
#endif

}  // namespace qnnb
