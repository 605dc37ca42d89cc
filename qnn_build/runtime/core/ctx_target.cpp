// The target string of a context binary: architecture, OS and compiled-in ISA features.
#include <cstring>
#include <vector>

#include "ctx_format.h"

namespace qnnb {

namespace {

struct Feature {
    const char* name;
    bool compiled;
    bool (*host)();
};

#if defined(__x86_64__)
#define QNNB_HOST_HAS(f) [] { return __builtin_cpu_supports(f) != 0; }
#else
#define QNNB_HOST_HAS(f) [] { return false; }
#endif

#if defined(__AVX2__)
constexpr bool kAvx2 = true;
#else
constexpr bool kAvx2 = false;
#endif
#if defined(__FMA__)
constexpr bool kFma = true;
#else
constexpr bool kFma = false;
#endif
#if defined(__F16C__)
constexpr bool kF16c = true;
#else
constexpr bool kF16c = false;
#endif
#if defined(__AVX512F__)
constexpr bool kAvx512f = true;
#else
constexpr bool kAvx512f = false;
#endif
#if defined(__AVX512BW__)
constexpr bool kAvx512bw = true;
#else
constexpr bool kAvx512bw = false;
#endif
#if defined(__AVX512VNNI__)
constexpr bool kAvx512vnni = true;
#else
constexpr bool kAvx512vnni = false;
#endif

const std::vector<Feature>& features() {
    static const std::vector<Feature> table = {
        {"avx2", kAvx2, QNNB_HOST_HAS("avx2")},
        {"fma", kFma, QNNB_HOST_HAS("fma")},
        {"f16c", kF16c, [] { return true; }},  // every avx2 host; gcc cannot query it by name
        {"avx512f", kAvx512f, QNNB_HOST_HAS("avx512f")},
        {"avx512bw", kAvx512bw, QNNB_HOST_HAS("avx512bw")},
        {"avx512vnni", kAvx512vnni, QNNB_HOST_HAS("avx512vnni")},
    };
    return table;
}

}  // namespace

const char* section_name(uint32_t id) {
    switch (id) {
        case kSectionGraph: return "graph";
        case kSectionPlan: return "plan";
        case kSectionData: return "data";
        case kSectionPrepared: return "prepared";
    }
    return "unknown";
}

std::string runtime_target() {
#if defined(QNNB_CTX_TARGET)
    // A cross target's runtime: the string its configs/targets/ file defines, so that the build
    // machine can write contexts for it (Target.context_target in qnn_build/toolchain/targets.py).
    return QNNB_CTX_TARGET;
#endif
#if defined(__x86_64__)
    std::string s = "x86_64";
#elif defined(__aarch64__)
    std::string s = "aarch64";
#else
    std::string s = "unknown";
#endif
#if defined(__linux__)
    s += "-linux";
#elif defined(_WIN32)
    s += "-windows";
#else
    s += "-unknown";
#endif
    for (const Feature& f : features())
        if (f.compiled) s += std::string("+") + f.name;
    return s;
}

std::string host_missing_features(const std::string& target) {
    std::string missing;
    size_t pos = target.find('+');
    while (pos != std::string::npos) {
        size_t next = target.find('+', pos + 1);
        std::string name = target.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
        bool known = false, has = false;
        for (const Feature& f : features())
            if (name == f.name) known = true, has = f.host();
        if (!known || !has) missing += (missing.empty() ? "" : "+") + name;
        pos = next;
    }
    return missing;
}

}  // namespace qnnb
