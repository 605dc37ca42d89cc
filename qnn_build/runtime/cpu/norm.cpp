// Normalisation ops in float32: Softmax, LogSoftmax, LayerNormalization, InstanceNormalization, LRN,
// and BatchNormalization with parameters computed at run time (with constant parameters the
// converter lowers it to Mul + Add instead).
// Means and variances accumulate in double so long rows keep their accuracy.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "../core/parallel.h"
#include "../core/simd.h"

namespace qnnb {
namespace {

bool require_float(const Node& n, std::string& err) {
    for (const Tensor* t : n.in)
        if (t && t->dtype != QNNB_FLOAT32) {
            err = std::string("tensor '") + t->name + "' has dtype " + dtype_name(t->dtype) + "; expected float32";
            return false;
        }
    for (const Tensor* t : n.out)
        if (t && t->dtype != QNNB_FLOAT32) {
            err = std::string("output '") + t->name + "' must be float32";
            return false;
        }
    return true;
}

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
    int64_t p = 1;
    for (size_t i = begin; i < end; ++i) p *= dims[i];
    return p;
}

// ---- Reductions over a contiguous row, in independent lanes the compiler can vectorise ----

constexpr int kLanes = 16;

// a * b + c, fused where the target has a fast fma (the build forbids implicit contraction).
inline float madd(float a, float b, float c) {
#ifdef __FP_FAST_FMAF
    return __builtin_fmaf(a, b, c);
#else
    return a * b + c;
#endif
}

// GCC does not vectorise a float max reduction by itself (NaN rules), so the kLanes lanes are
// spelled out as whole registers of the build (core/simd.h: a 16-lane type on AVX2 went through
// memory); lane l is lane l % kF32Lanes of register l / kF32Lanes.
float max_of(const float* x, int64_t n) {
    constexpr int64_t kRegs = kLanes / kF32Lanes;
    f32v lane[kRegs];
    for (auto& r : lane) r = splatv(-INFINITY);
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int64_t q = 0; q < kRegs; ++q) {
            const f32v v = loadv(x + i + q * kF32Lanes);
            lane[q] = v > lane[q] ? v : lane[q];
        }
    float m = -INFINITY;
    for (; i < n; ++i) m = x[i] > m ? x[i] : m;
    for (int l = 0; l < kLanes; ++l) {
        const float v = lane[l / kF32Lanes][l % kF32Lanes];
        m = v > m ? v : m;
    }
    return m;
}

double sum_of(const float* x, int64_t n) {
    double lane[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int l = 0; l < kLanes; ++l) lane[l] += x[i + l];
    double s = 0.0;
    for (; i < n; ++i) s += x[i];
    for (int l = 0; l < kLanes; ++l) s += lane[l];
    return s;
}

// Population variance around a known mean (two passes: exact for rows with a large mean).
double variance_of(const float* x, int64_t n, double mean) {
    double lane[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int l = 0; l < kLanes; ++l) {
            const double d = x[i + l] - mean;
            lane[l] += d * d;
        }
    double s = 0.0;
    for (; i < n; ++i) s += (x[i] - mean) * (x[i] - mean);
    for (int l = 0; l < kLanes; ++l) s += lane[l];
    return s / static_cast<double>(n);
}

// exp(x) to ~1.5 ulp, branch-free so loops over it vectorise (std::exp does not without fast-math):
// x = n*ln2 + r with |r| <= ln2/2, Cephes' polynomial for exp(r), 2^n put into the exponent bits.
inline float exp_approx(float x) {
    x = std::min(std::max(x, -87.3f), 88.3f);
    // Rounds x/ln2 to the nearest integer with the 1.5 * 2^23 trick; `shifted` then holds n in its low bits.
    const float shifted = madd(x, 1.44269504088896341f, 12582912.f);
    const float n = shifted - 12582912.f;
    float r = madd(n, -0.693359375f, x);
    r = madd(n, 2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = madd(p, r, 1.3981999507e-3f);
    p = madd(p, r, 8.3334519073e-3f);
    p = madd(p, r, 4.1665795894e-2f);
    p = madd(p, r, 1.6666665459e-1f);
    p = madd(p, r, 5.0000001201e-1f);
    p = madd(p, r * r, r) + 1.f;
    const int32_t bits = (__builtin_bit_cast(int32_t, shifted) - 0x4B400000 + 127) << 23;
    return p * __builtin_bit_cast(float, bits);
}

// ---- Softmax / LogSoftmax over [outer, n, inner] ----

struct SoftmaxState {
    int64_t outer = 1, n = 1, inner = 1;
};

bool prepare_softmax(Node& node, std::string& err) {
    if (!require_float(node, err)) return false;
    const std::vector<int64_t>& shape = node.in[0]->shape;
    const int64_t rank = node.in[0]->rank();
    const int64_t axis = node.params.i("axis", rank - 1);
    if (rank == 0 || axis < 0 || axis >= rank) {
        err = "axis out of range";
        return false;
    }
    auto& s = node.make_state<SoftmaxState>();
    const size_t a = static_cast<size_t>(axis);
    s.outer = product(shape, 0, a);
    if (node.params.i("coerce_2d", 0)) {
        // Before opset 13: the input is seen as [prod(shape[:axis]), prod(shape[axis:])].
        s.n = product(shape, a, shape.size());
    } else {
        s.n = shape[a];
        s.inner = product(shape, a + 1, shape.size());
    }
    return true;
}

template <bool kLog>
void softmax_row(const float* __restrict x, float* __restrict y, int64_t n) {
    const float m = max_of(x, n);
    for (int64_t i = 0; i < n; ++i) y[i] = exp_approx(x[i] - m);
    const double sum = sum_of(y, n);
    if (kLog) {
        const float log_sum = static_cast<float>(std::log(sum));
        for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - log_sum;
    } else {
        const float inv = static_cast<float>(1.0 / sum);
        for (int64_t i = 0; i < n; ++i) y[i] *= inv;
    }
}

constexpr int64_t kBlock = 256;

// Softmax along a strided axis for `w` adjacent columns: every step is a contiguous loop over them.
template <bool kLog>
void softmax_columns(const float* __restrict x, float* __restrict y, int64_t n, int64_t stride, int64_t w) {
    float mx[kBlock];
    double sum[kBlock];
    for (int64_t j = 0; j < w; ++j) {
        mx[j] = -INFINITY;
        sum[j] = 0.0;
    }
    for (int64_t k = 0; k < n; ++k) {
        const float* xk = x + k * stride;
        for (int64_t j = 0; j < w; ++j) mx[j] = xk[j] > mx[j] ? xk[j] : mx[j];
    }
    for (int64_t k = 0; k < n; ++k) {
        const float* xk = x + k * stride;
        float* yk = y + k * stride;
        for (int64_t j = 0; j < w; ++j) {
            yk[j] = exp_approx(xk[j] - mx[j]);
            sum[j] += yk[j];
        }
    }
    float f[kBlock];
    for (int64_t j = 0; j < w; ++j) f[j] = static_cast<float>(kLog ? std::log(sum[j]) : 1.0 / sum[j]);
    for (int64_t k = 0; k < n; ++k) {
        const float* xk = x + k * stride;
        float* yk = y + k * stride;
        if (kLog) {
            for (int64_t j = 0; j < w; ++j) yk[j] = (xk[j] - mx[j]) - f[j];
        } else {
            for (int64_t j = 0; j < w; ++j) yk[j] *= f[j];
        }
    }
}

template <bool kLog>
void run_softmax(Node& node, const ExecContext& ctx) {
    const SoftmaxState& s = node.state_as<SoftmaxState>();
    const float* x = node.in[0]->in<float>();
    float* y = node.out[0]->out<float>();
    if (s.inner == 1) {
        parallel_for(ctx, s.outer, [&](int64_t o) { softmax_row<kLog>(x + o * s.n, y + o * s.n, s.n); });
        return;
    }
    const int64_t blocks = (s.inner + kBlock - 1) / kBlock;
    parallel_for(ctx, s.outer * blocks, [&](int64_t t) {
        const int64_t o = t / blocks, j0 = (t % blocks) * kBlock;
        const int64_t off = o * s.n * s.inner + j0;
        softmax_columns<kLog>(x + off, y + off, s.n, s.inner, std::min(kBlock, s.inner - j0));
    });
}

// ---- LayerNormalization: rows of `cols` elements, with optional Mean / InvStdDev outputs ----

struct LayerNormState {
    int64_t rows = 0, cols = 0;
    float epsilon = 1e-5f;
};

bool prepare_layer_norm(Node& node, std::string& err) {
    if (!require_float(node, err)) return false;
    const Tensor* x = node.in[0];
    const int64_t axis = node.params.i("axis", x->rank() - 1);
    if (axis < 0 || axis >= x->rank()) {
        err = "axis out of range";
        return false;
    }
    auto& s = node.make_state<LayerNormState>();
    s.epsilon = node.params.f("epsilon", 1e-5f);
    s.rows = product(x->shape, 0, static_cast<size_t>(axis));
    s.cols = product(x->shape, static_cast<size_t>(axis), x->shape.size());
    for (size_t i = 1; i < 3; ++i) {
        const Tensor* p = node.input(i);
        if (p && p->numel() != s.cols) {
            err = std::string("'") + p->name + "' must hold one value per normalised element";
            return false;
        }
    }
    for (size_t i = 1; i < 3; ++i) {
        const Tensor* o = node.output(i);
        if (o && o->numel() != s.rows) {
            err = "Mean / InvStdDev output size differs from the number of rows";
            return false;
        }
    }
    if (!node.input(1)) {
        err = "Scale is required";
        return false;
    }
    return true;
}

void run_layer_norm(Node& node, const ExecContext& ctx) {
    const LayerNormState& s = node.state_as<LayerNormState>();
    const float* x = node.in[0]->in<float>();
    const float* scale = node.in[1]->in<float>();
    const float* bias = node.input(2) ? node.in[2]->in<float>() : nullptr;
    float* y = node.out[0]->out<float>();
    float* mean_out = node.output(1) ? node.out[1]->out<float>() : nullptr;
    float* inv_out = node.output(2) ? node.out[2]->out<float>() : nullptr;
    const int64_t cols = s.cols;
    parallel_for(ctx, s.rows, [&](int64_t r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        const double mean_d = sum_of(xr, cols) / static_cast<double>(cols);
        const double var = variance_of(xr, cols, mean_d);
        const float mean = static_cast<float>(mean_d);
        const float inv = static_cast<float>(1.0 / std::sqrt(var + s.epsilon));
        if (bias) {
            for (int64_t i = 0; i < cols; ++i) yr[i] = (xr[i] - mean) * inv * scale[i] + bias[i];
        } else {
            for (int64_t i = 0; i < cols; ++i) yr[i] = (xr[i] - mean) * inv * scale[i];
        }
        if (mean_out) mean_out[r] = mean;
        if (inv_out) inv_out[r] = inv;
    });
}

// ---- InstanceNormalization: x [N, C, spatial...], per-channel scale and bias ----

struct InstanceNormState {
    int64_t channels = 0, spatial = 0, planes = 0;
    float epsilon = 1e-5f;
};

bool prepare_instance_norm(Node& node, std::string& err) {
    if (!require_float(node, err)) return false;
    const Tensor* x = node.in[0];
    if (x->rank() < 2 || node.in.size() < 3 || !node.in[1] || !node.in[2]) {
        err = "expects x of rank >= 2, scale and bias";
        return false;
    }
    auto& s = node.make_state<InstanceNormState>();
    s.channels = x->dim(1);
    s.planes = x->dim(0) * s.channels;
    s.spatial = product(x->shape, 2, x->shape.size());
    s.epsilon = node.params.f("epsilon", 1e-5f);
    if (node.in[1]->numel() != s.channels || node.in[2]->numel() != s.channels) {
        err = "scale and bias must hold one value per channel";
        return false;
    }
    return true;
}

void run_instance_norm(Node& node, const ExecContext& ctx) {
    const InstanceNormState& s = node.state_as<InstanceNormState>();
    const float* x = node.in[0]->in<float>();
    const float* scale = node.in[1]->in<float>();
    const float* bias = node.in[2]->in<float>();
    float* y = node.out[0]->out<float>();
    const int64_t hw = s.spatial;
    parallel_for(ctx, s.planes, [&](int64_t p) {
        const float* xp = x + p * hw;
        float* yp = y + p * hw;
        const int64_t c = p % s.channels;
        const double mean_d = sum_of(xp, hw) / static_cast<double>(hw);
        const double var = variance_of(xp, hw, mean_d);
        const float mean = static_cast<float>(mean_d);
        const float k = static_cast<float>(scale[c] / std::sqrt(var + s.epsilon));
        const float b = bias[c];
        for (int64_t i = 0; i < hw; ++i) yp[i] = (xp[i] - mean) * k + b;
    });
}

// ---- LRN: y = x / (bias + alpha/size * sum of x^2 over neighbouring channels)^beta ----

struct LrnState {
    int64_t batch = 0, channels = 0, spatial = 0;
    int64_t before = 0, after = 0;  // the window is [c - before, c + after]
    float alpha_over_size = 0.f, beta = 0.f, bias = 0.f;
};

bool prepare_lrn(Node& node, std::string& err) {
    if (!require_float(node, err)) return false;
    const Tensor* x = node.in[0];
    const int64_t size = node.params.i("size", 0);
    if (x->rank() < 2 || size < 1) {
        err = "expects x of rank >= 2 and size >= 1";
        return false;
    }
    auto& s = node.make_state<LrnState>();
    s.batch = x->dim(0);
    s.channels = x->dim(1);
    s.spatial = product(x->shape, 2, x->shape.size());
    s.before = (size - 1) / 2;
    s.after = size - 1 - s.before;
    s.alpha_over_size = node.params.f("alpha", 1e-4f) / static_cast<float>(size);
    s.beta = node.params.f("beta", 0.75f);
    s.bias = node.params.f("bias", 1.f);
    return true;
}

void run_lrn(Node& node, const ExecContext& ctx) {
    const LrnState& s = node.state_as<LrnState>();
    const float* x = node.in[0]->in<float>();
    float* y = node.out[0]->out<float>();
    const int64_t hw = s.spatial;
    const int64_t blocks = (hw + kBlock - 1) / kBlock;
    parallel_for(ctx, s.batch * s.channels * blocks, [&](int64_t t) {
        const int64_t plane = t / blocks, j0 = (t % blocks) * kBlock;
        const int64_t w = std::min(kBlock, hw - j0);
        const int64_t n = plane / s.channels, c = plane % s.channels;
        const int64_t c_lo = std::max<int64_t>(0, c - s.before);
        const int64_t c_hi = std::min(s.channels - 1, c + s.after);
        float sq[kBlock];
        for (int64_t j = 0; j < w; ++j) sq[j] = 0.f;
        for (int64_t cc = c_lo; cc <= c_hi; ++cc) {
            const float* xc = x + (n * s.channels + cc) * hw + j0;
            for (int64_t j = 0; j < w; ++j) sq[j] += xc[j] * xc[j];
        }
        const float* xp = x + plane * hw + j0;
        float* yp = y + plane * hw + j0;
        const float k = s.alpha_over_size, b = s.bias;
        if (s.beta == 0.75f) {
            // t^-0.75 = 1 / (sqrt(t) * sqrt(sqrt(t))): vectorises, unlike pow.
            for (int64_t j = 0; j < w; ++j) {
                const float d = b + k * sq[j];
                const float r = std::sqrt(d);
                yp[j] = xp[j] / (r * std::sqrt(r));
            }
        } else {
            for (int64_t j = 0; j < w; ++j) yp[j] = xp[j] * std::pow(b + k * sq[j], -s.beta);
        }
    });
}

// ---- BatchNormalization (inference) with runtime parameters: y = x * s[c] + t[c] ----

struct BatchNormState {
    int64_t channels = 0, spatial = 0, planes = 0;
    float epsilon = 1e-5f;
};

bool prepare_batch_norm(Node& node, std::string& err) {
    if (!require_float(node, err)) return false;
    const Tensor* x = node.in[0];
    if (x->rank() < 2 || node.in.size() < 5) {
        err = "expects x of rank >= 2, scale, B, mean and var";
        return false;
    }
    auto& s = node.make_state<BatchNormState>();
    s.channels = x->dim(1);
    s.planes = x->dim(0) * s.channels;
    s.spatial = product(x->shape, 2, x->shape.size());
    s.epsilon = node.params.f("epsilon", 1e-5f);
    for (size_t i = 1; i < 5; ++i)
        if (!node.in[i] || node.in[i]->numel() != s.channels) {
            err = "scale, B, mean and var must hold one value per channel";
            return false;
        }
    return true;
}

void run_batch_norm(Node& node, const ExecContext& ctx) {
    const BatchNormState& s = node.state_as<BatchNormState>();
    const float* x = node.in[0]->in<float>();
    const float* gamma = node.in[1]->in<float>();
    const float* beta = node.in[2]->in<float>();
    const float* mean = node.in[3]->in<float>();
    const float* var = node.in[4]->in<float>();
    float* y = node.out[0]->out<float>();
    const int64_t hw = s.spatial;
    parallel_for(ctx, s.planes, [&](int64_t p) {
        const int64_t c = p % s.channels;
        // The same arithmetic as the constant lowering: s and t in double, rounded once.
        const double scale_d = gamma[c] / std::sqrt(static_cast<double>(var[c]) + s.epsilon);
        const float k = static_cast<float>(scale_d);
        const float b = static_cast<float>(beta[c] - mean[c] * scale_d);
        const float* xp = x + p * hw;
        float* yp = y + p * hw;
        for (int64_t i = 0; i < hw; ++i) yp[i] = xp[i] * k + b;
    });
}

const Kernel kKernels[] = {
    {"Softmax", prepare_softmax, run_softmax<false>},
    {"LogSoftmax", prepare_softmax, run_softmax<true>},
    {"LayerNormalization", prepare_layer_norm, run_layer_norm},
    {"InstanceNormalization", prepare_instance_norm, run_instance_norm},
    {"LRN", prepare_lrn, run_lrn},
    {"BatchNormalization", prepare_batch_norm, run_batch_norm},
};

}  // namespace

extern const KernelTable kCpuNormKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace qnnb
