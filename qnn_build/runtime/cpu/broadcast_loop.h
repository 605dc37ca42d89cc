// One loop for the typed broadcasting binary ops outside the float32 family (comparisons, Mod):
// y[i] = f(a[..], b[..]) over a BroadcastPlan that prepare stored as the node's state.
#pragma once

#include "../core/broadcast.h"
#include "../core/parallel.h"

namespace qnnb {

template <class T, class R, class F>
void run_broadcast_binary(Node& n, const ExecContext& ctx, F f) {
    const BroadcastPlan& p = n.state_as<BroadcastPlan>();
    const T* a = n.in[0]->in<T>();
    const T* b = n.in[1]->in<T>();
    R* y = n.out[0]->out<R>();
    const int64_t sa = p.inner_stride[0], sb = p.inner_stride[1];
    parallel_for(ctx, p.outer, [&](int64_t row) {
        int64_t off[2];
        p.offsets(row, off);
        const T* pa = a + off[0];
        const T* pb = b + off[1];
        R* py = y + row * p.inner;
        for (int64_t i = 0; i < p.inner; ++i) py[i] = f(pa[i * sa], pb[i * sb]);
    });
}

}  // namespace qnnb
