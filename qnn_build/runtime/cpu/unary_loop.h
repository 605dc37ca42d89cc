// One loop for the elementwise unary ops (activation.cpp, math.cpp): y[i] = f(x[i]) over the whole
// tensor, in chunks large enough that threads do real work and small enough to spread.
#pragma once

#include <algorithm>

#include "../core/parallel.h"

namespace qnnb {

template <class T, class F>
void run_unary_map(Node& n, const ExecContext& ctx, F f) {
    constexpr int64_t kChunk = 16384;
    const T* x = n.in[0]->in<T>();
    T* y = n.out[0]->out<T>();
    const int64_t total = n.out[0]->numel();
    parallel_for(ctx, (total + kChunk - 1) / kChunk, [&](int64_t c) {
        const int64_t end = std::min(total, (c + 1) * kChunk);
        for (int64_t i = c * kChunk; i < end; ++i) y[i] = f(x[i]);
    });
}

}  // namespace qnnb
