// Init-time breakdown in C, without Python in the timed loop (docs/benchmarks.md, "Init time"):
// compose alone, compose + finalize, a context binary from its path (open, map, check, bind) and
// from memory, and the checksum alone; mean over 2000 runs, printed twice (the first is warm-up).
//
//   g++ -O2 -std=c++17 -Iqnn_build/runtime/include bench/init_breakdown.cpp
//       qnn_build/runtime/core/checksum.cpp -o /tmp/init_breakdown -ldl -LRT -lqnnb -Wl,-rpath,RT
//   /tmp/init_breakdown libmodel.so model.ctx cpu         (RT: the folder of libqnnb.so)
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "qnnb.h"

namespace qnnb {
uint64_t xxh3_64(const void* data, size_t size);
}

using Clock = std::chrono::steady_clock;

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
        std::printf("compose %.1f us, compose+finalize %.1f us, context from file %.1f us, from memory %.1f us "
                    "(%ld bytes; checksum alone %.1f us)\n", c, cf, file, mem, size, sum);
    }
    return 0;
}
