// One way to split work across threads. Each index is computed by exactly one thread with the same
// arithmetic as on one thread, so results never depend on the thread count. OpenMP where the
// compiler has it (the host's g++); std::thread otherwise (zig's clang for cross targets).
#pragma once

#include <cstdint>
#if !defined(_OPENMP)
#include <thread>
#include <vector>
#endif

#include "graph.h"

namespace qnnb {

template <class Fn>
void parallel_for(const ExecContext& ctx, int64_t n, Fn fn) {
#if defined(_OPENMP)
    if (ctx.threads > 1 && n > 1) {
#pragma omp parallel for num_threads(ctx.threads) schedule(static)
        for (int64_t i = 0; i < n; ++i) fn(i);
        return;
    }
#else
    if (ctx.threads > 1 && n > 1) {
        // Static chunks as OpenMP's schedule(static): thread t takes [t * chunk, (t + 1) * chunk).
        const int64_t workers = ctx.threads < n ? ctx.threads : n, chunk = (n + workers - 1) / workers;
        auto run = [&](int64_t t) {
            for (int64_t i = t * chunk; i < n && i < (t + 1) * chunk; ++i) fn(i);
        };
        std::vector<std::thread> pool;
        for (int64_t t = 1; t < workers; ++t) pool.emplace_back(run, t);
        run(0);
        for (std::thread& th : pool) th.join();
        return;
    }
#endif
    for (int64_t i = 0; i < n; ++i) fn(i);
}

}  // namespace qnnb
