// Which instruction-set paths to take: core/isa.h.
#include "isa.h"

#include <cstdlib>
#include <cstring>

#if QNNB_HAS_AVX512_PATHS
#include <cpuid.h>
#endif

// The toolchain defines it from the target file (configs/targets/).
#ifndef QNNB_TARGET_ISA
#define QNNB_TARGET_ISA "unknown"
#endif

namespace qnnb {
namespace {

#if QNNB_HAS_AVX512_PATHS
// AVX-512 F, BW, VL, DQ and VNNI (cpuid leaf 7), and the OS saving the opmask and zmm registers
// (XCR0 bits 1, 2, 5, 6, 7), read from the CPU itself: no compiler runtime support needed.
bool cpu_has_avx512_vnni() {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 0xE6) != 0xE6) return false;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const bool f = b & (1u << 16), dq = b & (1u << 17), bw = b & (1u << 30), vl = b & (1u << 31);
    const bool vnni = c & (1u << 11);
    return f && dq && bw && vl && vnni;
}
#endif

bool capped_to_baseline() {
    const char* v = std::getenv("QNNB_ISA");
    return v && (std::strcmp(v, "x86-64-v3") == 0 || std::strcmp(v, "baseline") == 0);
}

}  // namespace

Isa active_isa() {
#if QNNB_HAS_AVX512_PATHS
    static const bool has = cpu_has_avx512_vnni();
    if (has && !capped_to_baseline()) return Isa::kAvx512Vnni;
#endif
    return Isa::kBaseline;
}

bool active_avx512_vbmi() {
#if QNNB_HAS_AVX512_PATHS
    static const bool has = [] {
        unsigned a, b, c, d;
        return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & (1u << 1));  // VBMI
    }();
    return has && active_isa() == Isa::kAvx512Vnni;
#else
    return false;
#endif
}

const char* active_isa_name() {
    return active_isa() == Isa::kAvx512Vnni ? QNNB_TARGET_ISA "+avx512vnni" : QNNB_TARGET_ISA;
}

}  // namespace qnnb
