// Instruction sets above the build's baseline, chosen at run time (docs/targets.md, "Portable x86-64").
//
// The x86-64 runtime is compiled for x86-64-v3 (AVX2, FMA, F16C); its AVX-512 paths (the npu's
// VNNI block kernel, the GEMM's wider tiles) are compiled for AVX-512 function by function, inside
// QNNB_AVX512_BEGIN / QNNB_AVX512_END, and called only when the CPU has AVX-512 and the environment
// allows it. Every such path gives the same bytes as the baseline one (tests force each).
//
// Inside a region, define only functions of internal linkage (an anonymous namespace) and include no
// header: an inline function compiled there would be AVX-512 code that the linker could pick for a
// caller outside it.
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QNNB_HAS_AVX512_PATHS 1
#define QNNB_AVX512_TARGET "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"
#if defined(__clang__)
#define QNNB_AVX512_BEGIN \
    _Pragma("clang attribute push (__attribute__((target(\"avx512f,avx512bw,avx512vl,avx512dq,avx512vnni\"))), apply_to = function)")
#define QNNB_AVX512_END _Pragma("clang attribute pop")
#else
#define QNNB_AVX512_BEGIN \
    _Pragma("GCC push_options") _Pragma("GCC target(\"avx512f,avx512bw,avx512vl,avx512dq,avx512vnni\")")
#define QNNB_AVX512_END _Pragma("GCC pop_options")
#endif
#else
#define QNNB_HAS_AVX512_PATHS 0
#endif

namespace qnnb {

// The instruction-set paths this process may take: what the CPU has (cpuid, and the OS saving the
// registers), capped by QNNB_ISA in the environment: "x86-64-v3" (or "baseline") keeps to the
// baseline paths. Read each time (a finalize reads it once per node; a GEMM call once).
enum class Isa { kBaseline, kAvx512Vnni };
Isa active_isa();
// The AVX-512 paths are taken (active_isa()) and the CPU also has AVX-512 VBMI (byte permutes: the
// npu's code-table lookups).
bool active_avx512_vbmi();
// "x86-64-v3+avx512vnni" when the AVX-512 paths are taken, the build's baseline name otherwise.
const char* active_isa_name();

}  // namespace qnnb
