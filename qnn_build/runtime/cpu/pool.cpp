// MaxPool (float32, int8, uint8), AveragePool, LpPool, GlobalAveragePool and GlobalMaxPool.
// Windows are 1D-3D with explicit pads, strides and dilations (handled as 3D with leading 1s); the
// output shape comes from the graph, so ceil_mode needs nothing here.
// Each plane is first copied into a worker buffer, padded (with a value the reduction ignores) and
// split into stride phases: phase (a, b) holds padded rows a, a + sh, ... and columns b, b + sw, ...
// Kernel tap (u = kh * dh, v = kw * dw) of output (oh, ow) then reads phase (u % sh, v % sw) at row
// oh + u / sh, column ow + v / sw, so a whole output plane reduces as one unit-stride run over
// "wide" rows (phase width qw; the columns past the output width are dropped), all taps at once.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "../core/parallel.h"
#include "../core/window.h"

namespace qnnb {
namespace {

struct PoolState : Window {
    int64_t planes = 0;  // batch x channels
    // Worker buffer: [row phase][column phase][padded depth][qh][qw], then the wide output.
    int64_t pd = 0, qh = 0, qw = 0;
    std::vector<int64_t> col_lo, col_hi;  // per column phase: the phase columns holding input
    std::vector<int64_t> taps;            // per (kd, kh, kw): offset from an output depth's origin
    int64_t phases_size = 0, wide_size = 0;  // elements per worker
    std::vector<float> buffers;           // one buffer per worker (as float storage for any T)
    std::vector<float> inv_count;         // AveragePool: 1 / divisor per output position (0 for none)

    int64_t buffer_size() const { return phases_size + wide_size; }
};

// AveragePool's divisor of each output position along one dim (window_count).
std::vector<float> window_counts(const PoolState& s, int d, bool include_pad) {
    std::vector<float> counts(s.out[d]);
    for (int64_t o = 0; o < s.out[d]; ++o) counts[o] = static_cast<float>(window_count(s, d, o, include_pad));
    return counts;
}

void plan_buffer(PoolState& s) {
    // Padded extents cover the input and every window (ceil_mode windows may run past the pads).
    int64_t extent[3];
    for (int d = 0; d < 3; ++d)
        extent[d] = std::max(s.pad_lo[d] + s.in[d] + s.pad_hi[d], (s.out[d] - 1) * s.stride[d] + (s.k[d] - 1) * s.dil[d] + 1);
    const int64_t sh = s.stride[1], sw = s.stride[2];
    s.pd = extent[0];
    s.qh = (extent[1] + sh - 1) / sh;
    s.qw = (extent[2] + sw - 1) / sw;
    s.col_lo.resize(sw);
    s.col_hi.resize(sw);
    for (int64_t b = 0; b < sw; ++b) valid_range(b - s.pad_lo[2], sw, s.in[2], s.qw, s.col_lo[b], s.col_hi[b]);
    const int64_t phase_plane = s.pd * s.qh * s.qw;
    for (int64_t kd = 0; kd < s.k[0]; ++kd)
        for (int64_t kh = 0; kh < s.k[1]; ++kh)
            for (int64_t kw = 0; kw < s.k[2]; ++kw) {
                const int64_t u = kh * s.dil[1], v = kw * s.dil[2];
                s.taps.push_back(((u % sh) * sw + v % sw) * phase_plane + (kd * s.dil[0] * s.qh + u / sh) * s.qw + v / sw);
            }
    s.phases_size = sh * sw * phase_plane;
    s.wide_size = (s.out[1] - 1) * s.qw + s.out[2];
    s.buffers.resize(s.buffer_size());  // one worker; run() adds more for more threads
}

bool prepare_window(Node& n, std::string& err) {
    if (n.in[0]->dtype != n.out[0]->dtype) {
        err = "input and output dtypes differ";
        return false;
    }
    PoolState& s = n.make_state<PoolState>();
    if (!read_pool_window(n, s, s.planes, err)) return false;
    plan_buffer(s);
    return true;
}

// One input plane into the worker buffer's phases, padding with `pad`.
template <class T>
void fill_buffer(const PoolState& s, const T* x, T pad, T* buf) {
    const int64_t sh = s.stride[1], sw = s.stride[2];
    for (int64_t a = 0; a < sh; ++a)
        for (int64_t b = 0; b < sw; ++b) {
            const int64_t lo = s.col_lo[b], hi = s.col_hi[b];
            T* dst = buf + (a * sw + b) * s.pd * s.qh * s.qw;
            for (int64_t dp = 0; dp < s.pd; ++dp)
                for (int64_t i = 0; i < s.qh; ++i, dst += s.qw) {
                    const int64_t id = dp - s.pad_lo[0], ih = i * sh + a - s.pad_lo[1];
                    if (id < 0 || id >= s.in[0] || ih < 0 || ih >= s.in[1] || lo >= hi) {
                        std::fill(dst, dst + s.qw, pad);
                        continue;
                    }
                    const T* src = x + (id * s.in[1] + ih) * s.in[2] + lo * sw + b - s.pad_lo[2];
                    std::fill(dst, dst + lo, pad);
                    strided_copy(dst + lo, src, hi - lo, sw);
                    std::fill(dst + hi, dst + s.qw, pad);
                }
        }
}

// y[o] = combine over taps t of term(src[t][o]), o in [0, n). TAPS fixed: the taps unroll and the
// columns vectorise (vector_columns).
template <int TAPS, class T, class Term, class Combine>
void reduce_row(const T* const* src_in, int64_t n, T* __restrict y, Term term, Combine combine) {
    const T* src[TAPS];
    for (int t = 0; t < TAPS; ++t) src[t] = src_in[t];
    auto columns = [&](int64_t a, int64_t e) {
#pragma GCC ivdep
        for (int64_t o = a; o < e; ++o) {
            T acc = term(src[0][o]);
            for (int t = 1; t < TAPS; ++t) acc = combine(acc, term(src[t][o]));
            y[o] = acc;
        }
    };
    vector_columns(n, columns);
}

// Any number of taps: the same reduction, one tap at a time.
template <class T, class Term, class Combine>
void reduce_row_any(const T* const* src, int64_t taps, int64_t n, T* y, Term term, Combine combine) {
    for (int64_t o = 0; o < n; ++o) y[o] = term(src[0][o]);
    for (int64_t t = 1; t < taps; ++t)
        for (int64_t o = 0; o < n; ++o) y[o] = combine(y[o], term(src[t][o]));
}

// Reduces every window; finish(y row, wide row, od, oh) writes each output row from its wide row.
template <class T, class Term, class Combine, class Finish>
void run_pool(Node& n, const ExecContext& ctx, T pad, Term term, Combine combine, Finish finish) {
    PoolState& s = n.state_as<PoolState>();
    const T* x = n.in[0]->in<T>();
    T* y = n.out[0]->out<T>();
    const int64_t in_plane = s.in[0] * s.in[1] * s.in[2], oh_n = s.out[1], ow_n = s.out[2];
    const int64_t taps = s.taps.size(), wide_n = s.wide_size;
    const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(ctx.threads, s.planes));
    const int64_t per_worker = (s.planes + workers - 1) / workers;
    if ((int64_t)s.buffers.size() < workers * s.buffer_size()) s.buffers.resize(workers * s.buffer_size());
    parallel_for(ctx, workers, [&](int64_t w) {
        T* buf = reinterpret_cast<T*>(s.buffers.data() + w * s.buffer_size());
        T* wide = buf + s.phases_size;
        const T* src_small[64];
        std::vector<const T*> src_large(taps > 64 ? taps : 0);
        const T** src = taps > 64 ? src_large.data() : src_small;
        for (int64_t p = w * per_worker; p < std::min(s.planes, (w + 1) * per_worker); ++p) {
            fill_buffer(s, x + p * in_plane, pad, buf);
            for (int64_t od = 0; od < s.out[0]; ++od) {
                const T* origin = buf + od * s.stride[0] * s.qh * s.qw;
                for (int64_t t = 0; t < taps; ++t) src[t] = origin + s.taps[t];
                switch (taps) {
                    case 2: reduce_row<2>(src, wide_n, wide, term, combine); break;
                    case 3: reduce_row<3>(src, wide_n, wide, term, combine); break;
                    case 4: reduce_row<4>(src, wide_n, wide, term, combine); break;
                    case 9: reduce_row<9>(src, wide_n, wide, term, combine); break;
                    // more taps: gcc vectorises the fixed form across taps (gathers), not columns
                    default: reduce_row_any(src, taps, wide_n, wide, term, combine); break;
                }
                T* yd = y + (p * s.out[0] + od) * oh_n * ow_n;
                for (int64_t oh = 0; oh < oh_n; ++oh) finish(yd + oh * ow_n, wide + oh * s.qw, od, oh);
            }
        }
    });
}

// ---- MaxPool, AveragePool, LpPool --------------------------------------------------------------

template <class T>
void run_max_pool_typed(Node& n, const ExecContext& ctx) {
    const int64_t ow_n = n.state_as<PoolState>().out[2];
    run_pool<T>(n, ctx, std::numeric_limits<T>::lowest(), [](T v) { return v; },
                [](T a, T b) { return b > a ? b : a; },
                [ow_n](T* y, const T* wide, int64_t, int64_t) { std::memcpy(y, wide, sizeof(T) * ow_n); });
}

void run_max_pool(Node& n, const ExecContext& ctx) {
    switch (n.in[0]->dtype) {
        case QNNB_INT8: run_max_pool_typed<int8_t>(n, ctx); break;
        case QNNB_UINT8: run_max_pool_typed<uint8_t>(n, ctx); break;
        default: run_max_pool_typed<float>(n, ctx); break;
    }
}

bool prepare_max_pool(Node& n, std::string& err) {
    const qnnb_dtype t = n.in[0]->dtype;
    if (t != QNNB_FLOAT32 && t != QNNB_INT8 && t != QNNB_UINT8) {
        err = std::string("input has dtype ") + dtype_name(t) + "; expected float32, int8 or uint8";
        return false;
    }
    return prepare_window(n, err);
}

auto identity_term = [](float v) { return v; };
auto sum_op = [](float a, float b) { return a + b; };

void run_average_pool(Node& n, const ExecContext& ctx) {
    const PoolState& s = n.state_as<PoolState>();
    const int64_t oh_n = s.out[1], ow_n = s.out[2];
    const float* inv_count = s.inv_count.data();
    run_pool<float>(n, ctx, 0.f, identity_term, sum_op, [&](float* y, const float* sum, int64_t od, int64_t oh) {
        const float* inv = inv_count + (od * oh_n + oh) * ow_n;
        for (int64_t o = 0; o < ow_n; ++o) y[o] = sum[o] * inv[o];
    });
}

bool prepare_float_window(Node& n, std::string& err) {
    if (n.in[0]->dtype != QNNB_FLOAT32) {
        err = std::string("input has dtype ") + dtype_name(n.in[0]->dtype) + "; expected float32";
        return false;
    }
    return prepare_window(n, err);
}

bool prepare_average_pool(Node& n, std::string& err) {
    if (!prepare_float_window(n, err)) return false;
    PoolState& s = n.state_as<PoolState>();
    const bool include_pad = n.params.i("count_include_pad", 0) != 0;
    const auto count_d = window_counts(s, 0, include_pad), count_h = window_counts(s, 1, include_pad);
    const auto count_w = window_counts(s, 2, include_pad);
    for (float cd : count_d)
        for (float ch : count_h)
            for (float cw : count_w) s.inv_count.push_back(cd * ch * cw > 0.f ? 1.f / (cd * ch * cw) : 0.f);
    return true;
}

// LpPool: (sum over the window's inputs of |x|^p)^(1/p); padding adds nothing.
void run_lp_pool(Node& n, const ExecContext& ctx) {
    const int64_t ow_n = n.state_as<PoolState>().out[2];
    const float p = static_cast<float>(n.params.i("p", 2)), inv_p = 1.f / p;
    if (p == 2.f) {
        run_pool<float>(n, ctx, 0.f, [](float v) { return v * v; }, sum_op,
                        [ow_n](float* y, const float* sum, int64_t, int64_t) {
                            for (int64_t o = 0; o < ow_n; ++o) y[o] = std::sqrt(sum[o]);
                        });
    } else if (p == 1.f) {
        run_pool<float>(n, ctx, 0.f, [](float v) { return std::fabs(v); }, sum_op,
                        [ow_n](float* y, const float* sum, int64_t, int64_t) {
                            std::memcpy(y, sum, sizeof(float) * ow_n);
                        });
    } else {
        run_pool<float>(n, ctx, 0.f, [p](float v) { return std::pow(std::fabs(v), p); }, sum_op,
                        [ow_n, inv_p](float* y, const float* sum, int64_t, int64_t) {
                            for (int64_t o = 0; o < ow_n; ++o) y[o] = std::pow(sum[o], inv_p);
                        });
    }
}

bool prepare_lp_pool(Node& n, std::string& err) {
    if (n.params.i("p", 2) < 1) {
        err = "p must be >= 1";
        return false;
    }
    return prepare_float_window(n, err);
}

// ---- global pools ------------------------------------------------------------------------------

struct GlobalState {
    int64_t planes = 0, size = 0;  // batch x channels, spatial elements per plane
};

bool prepare_global(Node& n, std::string& err) {
    const Tensor* x = n.in[0];
    if (x->dtype != QNNB_FLOAT32 || n.out[0]->dtype != QNNB_FLOAT32) {
        err = "expected float32 input and output";
        return false;
    }
    GlobalState& s = n.make_state<GlobalState>();
    return read_global_planes(n, s.planes, s.size, err);
}

// Reductions in 16 independent lanes (vectorisable without reassociating), combined at the end.
constexpr int kLanes = 16;

float plane_sum(const float* x, int64_t n) {
    float lanes[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int l = 0; l < kLanes; ++l) lanes[l] += x[i + l];
    float sum = 0.f;
    for (int l = 0; l < kLanes; ++l) sum += lanes[l];
    for (; i < n; ++i) sum += x[i];
    return sum;
}

float plane_max(const float* x, int64_t n) {
    float lanes[kLanes];
    std::fill(lanes, lanes + kLanes, -std::numeric_limits<float>::infinity());
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int l = 0; l < kLanes; ++l) lanes[l] = x[i + l] > lanes[l] ? x[i + l] : lanes[l];
    float m = lanes[0];
    for (int l = 1; l < kLanes; ++l) m = lanes[l] > m ? lanes[l] : m;
    for (; i < n; ++i) m = x[i] > m ? x[i] : m;
    return m;
}

void run_global_average(Node& n, const ExecContext& ctx) {
    const GlobalState s = n.state_as<GlobalState>();
    const float* x = n.in[0]->in<float>();
    float* y = n.out[0]->out<float>();
    parallel_for(ctx, s.planes, [&](int64_t p) { y[p] = plane_sum(x + p * s.size, s.size) / static_cast<float>(s.size); });
}

void run_global_max(Node& n, const ExecContext& ctx) {
    const GlobalState s = n.state_as<GlobalState>();
    const float* x = n.in[0]->in<float>();
    float* y = n.out[0]->out<float>();
    parallel_for(ctx, s.planes, [&](int64_t p) { y[p] = plane_max(x + p * s.size, s.size); });
}

const Kernel kKernels[] = {
    {"MaxPool", prepare_max_pool, run_max_pool},
    {"AveragePool", prepare_average_pool, run_average_pool},
    {"LpPool", prepare_lp_pool, run_lp_pool},
    {"GlobalAveragePool", prepare_global, run_global_average},
    {"GlobalMaxPool", prepare_global, run_global_max},
};

}  // namespace

extern const KernelTable kCpuPoolKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace qnnb
