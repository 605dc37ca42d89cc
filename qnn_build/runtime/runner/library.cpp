// Opening a model library: dlopen or LoadLibrary, after checking from its ELF/PE header that it
// was built for this machine (a clear message instead of the loader's).
#include <cstdio>
#include <cstring>

#include "runner.h"

#if defined(_WIN32)
#include <windows.h>
#else
#include <dlfcn.h>
#endif

namespace runner {
namespace {

#if defined(_WIN32)
constexpr const char* kOs = "windows";
#else
constexpr const char* kOs = "linux";
#endif
#if defined(__aarch64__) || defined(_M_ARM64)
constexpr const char* kMachine = "aarch64";
#else
constexpr const char* kMachine = "x86_64";
#endif

const char* elf_machine(uint16_t m) { return m == 62 ? "x86_64" : m == 183 ? "aarch64" : "another machine"; }
const char* pe_machine(uint16_t m) { return m == 0x8664 ? "x86_64" : m == 0xAA64 ? "aarch64" : "another machine"; }

uint16_t u16(const unsigned char* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

// "" when the file is for this machine (or unreadable: the loader reports that), else what it is for.
std::string built_for(const std::string& path) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw Error(path + ": model library not found");
    unsigned char head[64] = {0};
    const size_t got = std::fread(head, 1, sizeof head, f);
    std::string os, machine;
    if (got >= 20 && std::memcmp(head, "\x7f" "ELF", 4) == 0) {
        os = "linux";
        machine = elf_machine(u16(head + 18));
    } else if (got >= 64 && head[0] == 'M' && head[1] == 'Z') {
        const long pe = static_cast<long>(head[0x3C] | (head[0x3D] << 8) | (head[0x3E] << 16) |
                                          (static_cast<uint32_t>(head[0x3F]) << 24));
        unsigned char sig[6] = {0};
        if (std::fseek(f, pe, SEEK_SET) == 0 && std::fread(sig, 1, 6, f) == 6 && std::memcmp(sig, "PE\0\0", 4) == 0) {
            os = "windows";
            machine = pe_machine(u16(sig + 4));
        }
    }
    std::fclose(f);
    if (os.empty() || (os == kOs && machine == kMachine)) return "";
    return machine + "-" + os;
}

}  // namespace

qnnb_compose_fn load_model_library(const std::string& path) {
    const std::string other = built_for(path), mine = qnnb_runtime_target();
    if (!other.empty())
        throw Error(path + ": this model library was built for " + other + ", not for " + mine +
                    " (this qnn-net-run's target); rebuild it with --target " + mine);
#if defined(_WIN32)
    HMODULE lib = LoadLibraryA(path.c_str());
    if (!lib) throw Error(path + ": cannot load the model library (error " + std::to_string(GetLastError()) + ")");
    // The library stays loaded for the whole run: constants point into it.
    auto compose = reinterpret_cast<qnnb_compose_fn>(GetProcAddress(lib, QNNB_MODEL_COMPOSE_SYMBOL));
#else
    void* lib = dlopen(path.find('/') == std::string::npos ? ("./" + path).c_str() : path.c_str(), RTLD_NOW);
    if (!lib) throw Error(path + ": cannot load the model library (" + dlerror() + ")");
    auto compose = reinterpret_cast<qnnb_compose_fn>(dlsym(lib, QNNB_MODEL_COMPOSE_SYMBOL));
#endif
    if (!compose) throw Error(path + ": not a qnn-build model library (no " QNNB_MODEL_COMPOSE_SYMBOL ")");
    return compose;
}

}  // namespace runner
