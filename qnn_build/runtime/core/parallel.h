// One way to split work across threads. Each index is computed by exactly one thread with the same
// arithmetic as on one thread, so results never depend on the thread count.
#pragma once

#include <cstdint>

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
#endif
    (void)ctx;
    for (int64_t i = 0; i < n; ++i) fn(i);
}

}  // namespace qnnb
