// One loop for the typed broadcasting binary ops outside the float32 family (comparisons, Mod):
// y[i] = f(a[..], b[..]) over a BroadcastPlan that prepare stored as the node's state.
#pragma once

#include "../core/broadcast.h"

namespace qnnb {

template <class T, class R, class F>
void run_broadcast_binary(Node& n, const ExecContext& ctx, F f) {
    broadcast_rows(n.state_as<BroadcastPlan>(), n.in[0]->in<T>(), n.in[1]->in<T>(), n.out[0]->out<R>(), ctx, f);
}

}  // namespace qnnb
