// Init-time breakdown in C, without Python in the timed loop (docs/benchmarks.md, "Init time"):
// compose alone, compose + finalize, a context binary from its path (open, read or map, check, bind)
// and from memory, the checksum alone (mean over 2000 runs), and "cold": dlopen of a fresh copy of
// the library + compose + finalize (mean over 300 runs, dlclose'd after each). Printed twice (the
// first is warm-up).
//
// "read + checksum" is the floor of any loader that takes a path and checks the whole file (open,
// fstat, one aligned buffer, read, XXH3-64, free, close) with no parsing at all: compose + finalize
// over it bounds the ratio a faster reader could ever reach.
//
//   g++ -O2 -march=native -std=c++17 -Iqnn_build/runtime/include bench/init_breakdown.cpp
//       qnn_build/runtime/core/checksum.cpp -o /tmp/init_breakdown -ldl -LRT -lqnnb -Wl,-rpath,RT
//   /tmp/init_breakdown libmodel.so model.ctx cpu         (RT: the folder of libqnnb.so)
#include <dlfcn.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "qnnb.h"

namespace qnnb {
uint64_t xxh3_64(const void* data, size_t size);
}

using Clock = std::chrono::steady_clock;

// dlopen of a library this process has not mapped yet + compose + finalize: a copy of it, loaded
// and dlclose'd each run, so the loader does its whole work every time.
static double cold_load(const char* lib, const char* backend) {
    const std::string copy = "/tmp/init_breakdown_cold_" + std::to_string(getpid()) + ".so";
    if (std::system(("cp '" + std::string(lib) + "' " + copy).c_str()) != 0) std::exit(2);
    const int n = 300;
    double total = 0;
    for (int i = 0; i < n; ++i) {
        auto t0 = Clock::now();
        void* h = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
        auto compose = h ? reinterpret_cast<qnnb_compose_fn>(dlsym(h, QNNB_MODEL_COMPOSE_SYMBOL)) : nullptr;
        qnnb_graph* g = nullptr;
        qnnb_graph_create(backend, &g);
        if (!compose || qnnb_graph_compose(g, compose) != QNNB_OK || qnnb_graph_finalize(g) != QNNB_OK) std::exit(1);
        total += std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        qnnb_graph_free(g);
        dlclose(h);
    }
    std::remove(copy.c_str());
    return total / n;
}

// What reading and checking the file costs before anything is parsed.
static bool read_and_check(const char* path) {
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st;
    if (fstat(fd, &st) != 0) return false;
    const size_t size = static_cast<size_t>(st.st_size);
    void* buf = std::aligned_alloc(64, (size + 63) / 64 * 64);
    const bool ok = read(fd, buf, size) == static_cast<ssize_t>(size) && qnnb::xxh3_64(buf, size) != 1;
    std::free(buf);
    close(fd);
    return ok;
}

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s libmodel.so model.ctx BACKEND\n", argv[0]);
        return 2;
    }
    void* lib = dlopen(argv[1], RTLD_NOW);
    auto compose = lib ? reinterpret_cast<qnnb_compose_fn>(dlsym(lib, QNNB_MODEL_COMPOSE_SYMBOL)) : nullptr;
    FILE* f = std::fopen(argv[2], "rb");
    if (!compose || !f) return 2;
    std::fseek(f, 0, SEEK_END);
    long size = std::ftell(f);
    std::fseek(f, 0, SEEK_SET);
    void* buf = std::aligned_alloc(64, (static_cast<size_t>(size) + 63) / 64 * 64);
    if (std::fread(buf, 1, static_cast<size_t>(size), f) != static_cast<size_t>(size)) return 2;
    std::fclose(f);
    const char* backend = argv[3];
    const int n = 2000;
    auto each = [&](auto fn) {
        auto t0 = Clock::now();
        for (int i = 0; i < n; ++i) {
            qnnb_graph* g = nullptr;
            qnnb_graph_create(backend, &g);
            if (!fn(g)) {
                std::fprintf(stderr, "%s\n", qnnb_graph_last_error(g));
                std::exit(1);
            }
            qnnb_graph_free(g);
        }
        return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n;
    };
    for (int round = 0; round < 2; ++round) {
        double c = each([&](qnnb_graph* g) { return qnnb_graph_compose(g, compose) == QNNB_OK; });
        double cf = each([&](qnnb_graph* g) {
            return qnnb_graph_compose(g, compose) == QNNB_OK && qnnb_graph_finalize(g) == QNNB_OK;
        });
        double file = each([&](qnnb_graph* g) { return qnnb_graph_load_context_file(g, argv[2]) == QNNB_OK; });
        double mem = each([&](qnnb_graph* g) {
            return qnnb_graph_load_context(g, buf, static_cast<size_t>(size)) == QNNB_OK;
        });
        volatile uint64_t sink = 0;
        auto t0 = Clock::now();
        for (int i = 0; i < n; ++i) sink = sink + qnnb::xxh3_64(buf, static_cast<size_t>(size));
        double sum = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n;
        t0 = Clock::now();
        for (int i = 0; i < n; ++i)
            if (!read_and_check(argv[2])) std::exit(1);
        double floor_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n;
        double cold = cold_load(argv[1], backend);
        std::printf("compose %.1f us, compose+finalize %.1f us, context from file %.1f us, from memory %.1f us "
                    "(%ld bytes; checksum alone %.1f us, read + checksum %.1f us); cold library %.1f us\n", c, cf, file,
                    mem, size, sum, floor_us, cold);
    }
    return 0;
}
