// Recurrent float32 ops: RNN, GRU, LSTM with ONNX semantics (the rule made every attribute explicit).
// Per direction, one product computes X*W^T plus biases for all time steps at once (W packed once at
// prepare when constant, const_b_product.h); each step then does
// one product H_{t-1}*R^T against R packed once (two for GRU without linear_before_reset) and the gate
// math on contiguous [hidden] rows, each batch row independently.
// One file for the three ops (over the usual size): they share the state, the projection, the packed
// recurrent product and the activations, and a shared header is not part of this family's files.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "../core/fastmath.h"
#include "../core/gemm.h"
#include "../core/parallel.h"
#include "const_b_product.h"

namespace qnnb {
namespace {

// ---- activations, applied in place to a row; the switch sits outside each loop so loops vectorise ----

enum ActKind { kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid,
               kElu, kSoftsign, kSoftplus, kNumActs };

struct Activation {
    int kind = kTanh;
    float alpha = 0.f, beta = 0.f;
};

void activate(const Activation& act, float* v, int64_t n) {
    const float a = act.alpha, b = act.beta;
    switch (act.kind) {
        case kRelu: for (int64_t i = 0; i < n; ++i) v[i] = v[i] > 0.f ? v[i] : 0.f; break;
        case kTanh: for (int64_t i = 0; i < n; ++i) v[i] = tanh_approx(v[i]); break;
        case kSigmoid: for (int64_t i = 0; i < n; ++i) v[i] = sigmoid_approx(v[i]); break;
        case kAffine: for (int64_t i = 0; i < n; ++i) v[i] = a * v[i] + b; break;
        case kLeakyRelu: for (int64_t i = 0; i < n; ++i) v[i] = v[i] < 0.f ? a * v[i] : v[i]; break;
        case kThresholdedRelu: for (int64_t i = 0; i < n; ++i) v[i] = v[i] > a ? v[i] : 0.f; break;
        case kScaledTanh: for (int64_t i = 0; i < n; ++i) v[i] = a * tanh_approx(b * v[i]); break;
        case kHardSigmoid:
            for (int64_t i = 0; i < n; ++i) {
                const float y = a * v[i] + b;
                v[i] = y < 0.f ? 0.f : (y > 1.f ? 1.f : y);
            }
            break;
        case kElu: for (int64_t i = 0; i < n; ++i) v[i] = v[i] < 0.f ? a * (exp_approx(v[i]) - 1.f) : v[i]; break;
        case kSoftsign: for (int64_t i = 0; i < n; ++i) v[i] = v[i] / (1.f + std::fabs(v[i])); break;
        case kSoftplus:
            for (int64_t i = 0; i < n; ++i) v[i] = v[i] > 20.f ? v[i] : std::log1p(std::exp(v[i]));
            break;
    }
}

// Clip to [-limit, limit] (ONNX `clip`: applied to every activation's input); no-op when infinite.
void clip_row(float* v, int64_t n, float limit) {
    if (std::isinf(limit)) return;
    for (int64_t i = 0; i < n; ++i) v[i] = v[i] < -limit ? -limit : (v[i] > limit ? limit : v[i]);
}

void add_row(float* dst, const float* src, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

// ---- the recurrent product H_{t-1} * R^T with R packed once ----
// A per-step sgemm repacks R on every call, which dominates a step: R is re-read whole for a few
// rows of H. So R is packed once (at prepare when constant) into column panels that one loop streams.
// Measured at 1 thread against per-step sgemm: 1.5-6x faster for batch 1..512, hidden 128..512.

constexpr int kPanel = 32;  // output columns per panel

// Rows of R ([rows, k], row-major) as panels [rows/kPanel][k][kPanel], zero-padded.
struct PackedRows {
    int64_t rows = 0, k = 0;
    std::vector<float> data;
    int64_t panels() const { return (rows + kPanel - 1) / kPanel; }
    void pack(const float* src, int64_t n_rows, int64_t n_k) {
        rows = n_rows;
        k = n_k;
        data.assign(static_cast<size_t>(panels() * k * kPanel), 0.f);
        for (int64_t j = 0; j < rows; ++j) {
            float* dst = &data[(j / kPanel) * k * kPanel + j % kPanel];
            for (int64_t i = 0; i < k; ++i) dst[i * kPanel] = src[j * k + i];
        }
    }
};

// out[r, 0:cols] = h[r, :] * panel, for ROWS rows of h; accumulators stay in registers. The fma is
// explicit (the build disables contraction): as in sgemm, one rounding per multiply-add.
template <int ROWS>
void panel_product(const float* panel, int64_t k, const float* h, int64_t ldh, float* out, int64_t ldo,
                   int64_t cols) {
    float acc[ROWS][kPanel] = {};
    for (int64_t i = 0; i < k; ++i) {
        const float* w = panel + i * kPanel;
        for (int r = 0; r < ROWS; ++r) {
            const float hv = h[r * ldh + i];
            for (int j = 0; j < kPanel; ++j) acc[r][j] = std::fma(hv, w[j], acc[r][j]);
        }
    }
    for (int r = 0; r < ROWS; ++r) std::memcpy(out + r * ldo, acc[r], static_cast<size_t>(cols) * sizeof(float));
}

// out[b, j] = sum_i h[b, i] * R[j, i]: panels split across threads, up to eight batch rows at a time.
void packed_product(const PackedRows& p, const float* h, int64_t batch, float* out, int64_t ldo,
                    const ExecContext& ctx) {
    parallel_for(ctx, p.panels(), [&](int64_t q) {
        const float* panel = &p.data[q * p.k * kPanel];
        const int64_t c0 = q * kPanel, cols = std::min<int64_t>(kPanel, p.rows - c0);
        const int64_t ldh = p.k;
        int64_t b = 0;
        for (; b + 8 <= batch; b += 8) panel_product<8>(panel, p.k, h + b * ldh, ldh, out + b * ldo + c0, ldo, cols);
        for (; b + 4 <= batch; b += 4) panel_product<4>(panel, p.k, h + b * ldh, ldh, out + b * ldo + c0, ldo, cols);
        const float* hb = h + b * ldh;
        float* ob = out + b * ldo + c0;
        if (batch - b == 3) panel_product<3>(panel, p.k, hb, ldh, ob, ldo, cols);
        if (batch - b == 2) panel_product<2>(panel, p.k, hb, ldh, ob, ldo, cols);
        if (batch - b == 1) panel_product<1>(panel, p.k, hb, ldh, ob, ldo, cols);
    });
}

// ---- the state every kernel shares: sizes, layout strides, scratch ----

struct Rnn {
    int64_t gates = 1, seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
    bool reverse = false, batch_first = false, linear_before_reset = false;
    float clip = INFINITY;
    int64_t acts_per_dir = 1;
    std::vector<Activation> acts;  // [dirs][acts_per_dir]
    std::vector<float> xw;         // [seq*batch, gates*hidden]: X*W^T + biases, rows in X's order
    std::vector<float> hr;         // [batch, gates*hidden]: H_{t-1}*R^T for one step
    std::vector<float> h, c;       // [batch, hidden]: the running state
    std::vector<float> rh;         // GRU: r (.) H_{t-1}
    std::vector<float> bias;       // [gates*hidden]: what goes into xw
    std::vector<float> rbh;        // GRU linear_before_reset: R's bias of the h gate
    std::vector<int64_t> lens;     // per batch row
    std::vector<PackedRows> packed;  // [dirs][parts]: R's gate rows (GRU default: z,r apart from h)
    std::vector<ConstB> w_packed;    // [dirs]: W_d^T for the input projection, when W is constant
    ExecContext product_ctx, rows_ctx;  // threads for the per-step product and gate math

    // GRU without linear_before_reset multiplies the h gate by r (.) H, not H: a second product.
    int64_t parts() const { return gates == 3 && !linear_before_reset ? 2 : 1; }

    int64_t gh() const { return gates * hidden; }
    // Row of X (and xw) for time t, batch b.
    int64_t x_row(int64_t t, int64_t b) const { return batch_first ? b * seq + t : t * batch + b; }
    // Offset of Y[t, d, b] (seq-first) or Y[b, t, d] (batch-first).
    int64_t y_off(int64_t t, int64_t d, int64_t b) const {
        return (batch_first ? (b * seq + t) * dirs + d : (t * dirs + d) * batch + b) * hidden;
    }
    // Offset of a [dirs, batch] state tensor entry (initial_h/c, Y_h, Y_c).
    int64_t s_off(int64_t d, int64_t b) const { return (batch_first ? b * dirs + d : d * batch + b) * hidden; }
    const Activation& act(int64_t d, int k) const { return acts[static_cast<size_t>(d * acts_per_dir + k)]; }
};

// Packs R_d's rows for the per-step product (part 0: all gates, or GRU's z and r; part 1: GRU's h).
void pack_direction(Rnn& s, const Tensor* r, int64_t d) {
    const float* rd = r->in<float>() + d * s.gh() * s.hidden;
    const int64_t rows0 = s.parts() == 2 ? 2 * s.hidden : s.gh();
    s.packed[d * s.parts()].pack(rd, rows0, s.hidden);
    if (s.parts() == 2) s.packed[d * s.parts() + 1].pack(rd + rows0 * s.hidden, s.hidden, s.hidden);
}

bool prepare_rnn(Node& n, std::string& err, int64_t gates, int64_t acts_per_dir) {
    for (size_t i : {0, 1, 2, 3, 5, 6, 7}) {
        const Tensor* t = n.input(i);
        if (t && t->dtype != QNNB_FLOAT32) {
            err = "input " + std::to_string(i) + " has dtype " + dtype_name(t->dtype) + "; expected float32";
            return false;
        }
    }
    if (n.input(4) && n.input(4)->dtype != QNNB_INT32) {
        err = "sequence_lens must be int32";
        return false;
    }
    auto& s = n.make_state<Rnn>();
    s.gates = gates;
    s.acts_per_dir = acts_per_dir;
    s.batch_first = n.params.i("layout", 0) == 1;
    const Tensor* x = n.in[0];
    if (x->rank() != 3) {
        err = "X must have rank 3";
        return false;
    }
    s.seq = x->dim(s.batch_first ? 1 : 0);
    s.batch = x->dim(s.batch_first ? 0 : 1);
    s.input = x->dim(2);
    s.hidden = n.params.i("hidden_size", 0);
    const std::string direction = n.params.s("direction", "forward");
    s.dirs = direction == "bidirectional" ? 2 : 1;
    s.reverse = direction == "reverse";
    s.clip = n.params.f("clip", INFINITY);
    s.linear_before_reset = n.params.i("linear_before_reset", 0) != 0;
    const Tensor* w = n.in[1];
    const Tensor* r = n.in[2];
    if (w->numel() != s.dirs * s.gh() * s.input || r->numel() != s.dirs * s.gh() * s.hidden ||
        (n.input(3) && n.input(3)->numel() != s.dirs * 2 * s.gh()) ||
        (n.input(7) && n.input(7)->numel() != s.dirs * 3 * s.hidden)) {
        err = "W, R, B or P do not match hidden_size and the input size";
        return false;
    }
    const auto codes = n.params.ints("activations");
    const auto alphas = n.params.floats("activation_alpha");
    const auto betas = n.params.floats("activation_beta");
    if (static_cast<int64_t>(codes.size()) != s.dirs * acts_per_dir || alphas.size() != codes.size() ||
        betas.size() != codes.size()) {
        err = "activations, activation_alpha and activation_beta must list one entry per function";
        return false;
    }
    for (size_t i = 0; i < codes.size(); ++i) {
        if (codes[i] < 0 || codes[i] >= kNumActs) {
            err = "unknown activation code " + std::to_string(codes[i]);
            return false;
        }
        s.acts.push_back({static_cast<int>(codes[i]), alphas[i], betas[i]});
    }
    s.xw.resize(static_cast<size_t>(s.seq * s.batch * s.gh()));
    s.hr.resize(static_cast<size_t>(s.batch * s.gh()));
    s.h.resize(static_cast<size_t>(s.batch * s.hidden));
    s.c.resize(s.h.size());
    s.rh.resize(s.h.size());
    s.bias.resize(static_cast<size_t>(s.gh()));
    s.rbh.resize(static_cast<size_t>(s.hidden));
    s.lens.resize(static_cast<size_t>(s.batch));
    s.packed.resize(static_cast<size_t>(s.dirs * s.parts()));
    if (r->is_const())
        for (int64_t d = 0; d < s.dirs; ++d) pack_direction(s, r, d);
    if (w->is_const() && s.input * s.gh() >= kConstBMinWeights) {
        s.w_packed.resize(static_cast<size_t>(s.dirs));
        for (int64_t d = 0; d < s.dirs; ++d)
            pack_const_b(w->in<float>() + d * s.gh() * s.input, s.input, s.gh(), true, s.w_packed[static_cast<size_t>(d)]);
    }
    return true;
}

bool prepare_rnn_op(Node& n, std::string& err) { return prepare_rnn(n, err, 1, 1); }
bool prepare_gru(Node& n, std::string& err) { return prepare_rnn(n, err, 3, 2); }
bool prepare_lstm(Node& n, std::string& err) { return prepare_rnn(n, err, 4, 3); }

// ---- one direction, shared by all three ops ----

// Fills s.xw with X*W_d^T plus the biases folded in (B_d's W and R halves, except what GRU keeps apart).
void input_projection(Rnn& s, const Node& n, int64_t d) {
    const int64_t gh = s.gh();
    const Tensor* bt = n.input(3);
    std::fill(s.bias.begin(), s.bias.end(), 0.f);
    std::fill(s.rbh.begin(), s.rbh.end(), 0.f);
    if (bt) {
        const float* wb = bt->in<float>() + d * 2 * gh;
        const float* rb = wb + gh;
        // GRU with linear_before_reset: R's h-gate bias is added inside r (.) (...), so keep it apart.
        const int64_t fold = s.gates == 3 && s.linear_before_reset ? 2 * s.hidden : gh;
        for (int64_t j = 0; j < gh; ++j) s.bias[j] = wb[j] + (j < fold ? rb[j] : 0.f);
        if (fold < gh) std::copy(rb + fold, rb + gh, s.rbh.begin());
    }
    const int64_t rows = s.seq * s.batch;
    if (!s.w_packed.empty()) {
        const_b_product(s.w_packed[static_cast<size_t>(d)], n.in[0]->in<float>(), rows, s.input, s.xw.data(), gh,
                        s.product_ctx);
        if (bt)
            for (int64_t i = 0; i < rows; ++i) add_row(&s.xw[i * gh], s.bias.data(), gh);
        return;
    }
    if (bt)
        for (int64_t i = 0; i < rows; ++i) std::memcpy(&s.xw[i * gh], s.bias.data(), gh * sizeof(float));
    sgemm(false, true, rows, gh, s.input, 1.f, n.in[0]->in<float>(), s.input,
          n.in[1]->in<float>() + d * gh * s.input, s.input, bt ? 1.f : 0.f, s.xw.data(), gh);
}

void load_state(std::vector<float>& dst, const Tensor* init, const Rnn& s, int64_t d) {
    for (int64_t b = 0; b < s.batch; ++b) {
        float* row = &dst[b * s.hidden];
        if (init) std::memcpy(row, init->in<float>() + s.s_off(d, b), s.hidden * sizeof(float));
        else std::fill(row, row + s.hidden, 0.f);
    }
}

// The final state into Y_h / Y_c; rows of length 0 get zeros (as onnxruntime), not the initial state.
void store_state(const std::vector<float>& src, Tensor* out, const Rnn& s, int64_t d) {
    if (!out) return;
    for (int64_t b = 0; b < s.batch; ++b) {
        float* dst = out->out<float>() + s.s_off(d, b);
        if (s.lens[b] > 0) std::memcpy(dst, &src[b * s.hidden], s.hidden * sizeof(float));
        else std::fill(dst, dst + s.hidden, 0.f);
    }
}

// h * R_d^T for one part's gate rows (see pack_direction), into s.hr's matching columns.
void recurrent_product(Rnn& s, int64_t d, int64_t part, const float* h) {
    float* out = s.hr.data() + (part == 0 ? 0 : 2 * s.hidden);
    packed_product(s.packed[d * s.parts() + part], h, s.batch, out, s.gh(), s.product_ctx);
}

// Step k of a direction touches, for batch row b, time t = k (forward) or len-1-k (backward).
int64_t step_time(const Rnn& s, bool backward, int64_t k, int64_t b) {
    return backward ? s.lens[b] - 1 - k : k;
}

// fn(b, xw row) for each batch row still within its length at step k.
template <class RowFn>
void for_active_rows(Rnn& s, int64_t k, bool backward, RowFn fn) {
    parallel_for(s.rows_ctx, s.batch, [&](int64_t b) {
        if (k >= s.lens[b]) return;
        fn(b, &s.xw[s.x_row(step_time(s, backward, k, b), b) * s.gh()]);
    });
}

// After a step: Y at each active row's time gets its new h; rows already past their length get zeros.
void write_step(Rnn& s, const Node& n, int64_t d, int64_t k, bool backward) {
    Tensor* y = n.output(0);
    if (!y) return;
    float* out = y->out<float>();
    for (int64_t b = 0; b < s.batch; ++b) {
        float* dst = out + s.y_off(k < s.lens[b] ? step_time(s, backward, k, b) : k, d, b);
        if (k < s.lens[b]) std::memcpy(dst, &s.h[b * s.hidden], s.hidden * sizeof(float));
        else std::fill(dst, dst + s.hidden, 0.f);
    }
}

// ---- the per-op gate math ----

void rnn_steps(Rnn& s, const Node& n, int64_t d, bool backward) {
    const int64_t hs = s.hidden;
    const Activation& f = s.act(d, 0);
    for (int64_t k = 0; k < s.seq; ++k) {
        recurrent_product(s, d, 0, s.h.data());
        for_active_rows(s, k, backward, [&](int64_t b, const float* xw) {
            float* g = &s.hr[b * hs];
            add_row(g, xw, hs);
            clip_row(g, hs, s.clip);
            activate(f, g, hs);
            std::memcpy(&s.h[b * hs], g, hs * sizeof(float));
        });
        write_step(s, n, d, k, backward);
    }
}

// z = f(xz + hz), r = f(xr + hr); n = g(xh + (r (.) H) Rh^T + biases), or with linear_before_reset
// g(xh + r (.) (H Rh^T + Rbh)); H = (1 - z) (.) n + z (.) H.
void gru_steps(Rnn& s, const Node& n, int64_t d, bool backward) {
    const int64_t hs = s.hidden, gh = s.gh();
    const Activation& f = s.act(d, 0);
    const Activation& g = s.act(d, 1);
    const float* rbh = s.rbh.data();
    for (int64_t k = 0; k < s.seq; ++k) {
        recurrent_product(s, d, 0, s.h.data());
        for_active_rows(s, k, backward, [&](int64_t b, const float* xw) {
            float* zr = &s.hr[b * gh];
            add_row(zr, xw, 2 * hs);
            clip_row(zr, 2 * hs, s.clip);
            activate(f, zr, 2 * hs);
            const float* r = zr + hs;
            const float* h = &s.h[b * hs];
            float* rh = &s.rh[b * hs];
            if (s.linear_before_reset) {
                float* nh = zr + 2 * hs;
                const float* xh = xw + 2 * hs;
                for (int64_t j = 0; j < hs; ++j) nh[j] = xh[j] + r[j] * (nh[j] + rbh[j]);
            } else {
                for (int64_t j = 0; j < hs; ++j) rh[j] = r[j] * h[j];
            }
        });
        if (!s.linear_before_reset) recurrent_product(s, d, 1, s.rh.data());
        for_active_rows(s, k, backward, [&](int64_t b, const float* xw) {
            const float* z = &s.hr[b * gh];
            float* nh = &s.hr[b * gh + 2 * hs];
            if (!s.linear_before_reset) add_row(nh, xw + 2 * hs, hs);
            clip_row(nh, hs, s.clip);
            activate(g, nh, hs);
            float* h = &s.h[b * hs];
            for (int64_t j = 0; j < hs; ++j) h[j] = (1.f - z[j]) * nh[j] + z[j] * h[j];
        });
        write_step(s, n, d, k, backward);
    }
}

// Gates i, o, f, c (ONNX order). i = f(xi + hi + Pi (.) C), f = f(xf + hf + Pf (.) C), c~ = g(xc + hc),
// C = f (.) C + i (.) c~, o = f(xo + ho + Po (.) C), H = o (.) h(C).
void lstm_steps(Rnn& s, const Node& n, int64_t d, bool backward) {
    const int64_t hs = s.hidden, gh = s.gh();
    const Activation& f = s.act(d, 0);
    const Activation& g = s.act(d, 1);
    const Activation& hact = s.act(d, 2);
    const Tensor* pt = n.input(7);
    const float* peep = pt ? pt->in<float>() + d * 3 * hs : nullptr;
    for (int64_t k = 0; k < s.seq; ++k) {
        recurrent_product(s, d, 0, s.h.data());
        for_active_rows(s, k, backward, [&](int64_t b, const float* xw) {
            float* gi = &s.hr[b * gh];
            float* go = gi + hs;
            float* gf = gi + 2 * hs;
            float* gc = gi + 3 * hs;
            float* c = &s.c[b * hs];
            add_row(gi, xw, gh);
            if (peep) {
                const float* pi = peep;
                const float* pf = peep + 2 * hs;
                for (int64_t j = 0; j < hs; ++j) {
                    gi[j] += pi[j] * c[j];
                    gf[j] += pf[j] * c[j];
                }
            }
            clip_row(gi, hs, s.clip);
            clip_row(gf, 2 * hs, s.clip);  // f and c~ are adjacent
            activate(f, gi, hs);
            activate(f, gf, hs);
            activate(g, gc, hs);
            for (int64_t j = 0; j < hs; ++j) c[j] = gf[j] * c[j] + gi[j] * gc[j];
            if (peep) {
                const float* po = peep + hs;
                for (int64_t j = 0; j < hs; ++j) go[j] += po[j] * c[j];
            }
            clip_row(go, hs, s.clip);
            activate(f, go, hs);
            std::memcpy(gc, c, hs * sizeof(float));  // c~ is spent: reuse it for h(C)
            activate(hact, gc, hs);
            float* h = &s.h[b * hs];
            for (int64_t j = 0; j < hs; ++j) h[j] = go[j] * gc[j];
        });
        write_step(s, n, d, k, backward);
    }
}

// Below these sizes a step is a few microseconds, and a thread fork/join per step costs more than it saves.
constexpr int64_t kMinParallelFmas = 1 << 20;
constexpr int64_t kMinParallelGateValues = 1 << 16;

template <void (*Steps)(Rnn&, const Node&, int64_t, bool)>
void run_recurrent(Node& n, const ExecContext& ctx) {
    Rnn& s = n.state_as<Rnn>();
    s.product_ctx = s.rows_ctx = ctx;
    if (s.batch * s.gh() * s.hidden < kMinParallelFmas) s.product_ctx.threads = 1;
    if (s.batch * s.gh() < kMinParallelGateValues) s.rows_ctx.threads = 1;
    const Tensor* lens = n.input(4);
    for (int64_t b = 0; b < s.batch; ++b) {
        const int64_t len = lens ? lens->in<int32_t>()[b] : s.seq;
        s.lens[b] = len < 0 ? 0 : (len > s.seq ? s.seq : len);
    }
    for (int64_t d = 0; d < s.dirs; ++d) {
        input_projection(s, n, d);
        if (!n.in[2]->is_const()) pack_direction(s, n.in[2], d);
        load_state(s.h, n.input(5), s, d);
        if (s.gates == 4) load_state(s.c, n.input(6), s, d);
        Steps(s, n, d, s.reverse || d == 1);
        store_state(s.h, n.output(1), s, d);
        if (s.gates == 4) store_state(s.c, n.output(2), s, d);
    }
}

const Kernel kKernels[] = {
    {"RNN", prepare_rnn_op, run_recurrent<rnn_steps>},
    {"GRU", prepare_gru, run_recurrent<gru_steps>},
    {"LSTM", prepare_lstm, run_recurrent<lstm_steps>},
};

}  // namespace

extern const KernelTable kCpuRnnKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace qnnb
