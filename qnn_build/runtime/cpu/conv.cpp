// Conv: float32, 1D/2D/3D, groups, dilations, explicit pads, optional bias. prepare picks a path:
//  - depthwise (1D/2D, one input channel per group): per output row, all kernel taps summed in
//    one vectorised pass over unit-stride rows of the padded, stride-split input (see Phases);
//  - pointwise (1x1, stride 1, no pads): one product straight on the input;
//  - direct (1D/2D): one product whose B rows are the padded, stride-split input of each channel
//    shifted by each kernel tap (core/packed_gemm.h), into "wide" output rows (phase width) whose
//    valid columns are then copied out: no im2col, every channel and tap summed in registers;
//  - im2col (everything else): columns for a bounded block of output positions, one product each;
//  - batched (a few positions per image, several images): every image's im2col columns, one product.
// Every path but depthwise multiplies by the weights packed once (at prepare when they are
// constant). Spatial dims are handled as 3D (D, H, W), with leading 1s for 1D/2D.
#include <algorithm>
#include <cstring>
#include <vector>

#include "../core/packed_gemm.h"
#include "../core/parallel.h"
#include "../core/simd.h"
#include "../core/window.h"

namespace qnnb {

namespace {

// ---- the padded, stride-split input (1D/2D) ----------------------------------------------------

// The input zero-padded and split into stride phases: phase (a, b) holds padded rows a, a + sh, ...
// and padded columns b, b + sw, ..., a qh x qw image per channel. Kernel tap (u = kh * dh,
// v = kw * dw) of output (oh, ow) then reads phase (u % sh, v % sw) at row oh + u / sh, column
// ow + v / sw: unit stride and always in bounds. The direct path keeps a whole batch item as
// [phase][channel][qh][qw]; the depthwise path one channel per worker as [phase][qh][qw].
// At stride 1 a row's right padding is also the next row's left padding (qw = width + the larger
// pad, not both): a tap left of column 0 reads the end of the row above, which is zeros. The last
// row's padding then runs `slack` floats past the image, zeros too.
struct Phases {
    int64_t sh = 1, sw = 1, qh = 0, qw = 0, slack = 0;
    bool identity = true;                 // stride 1, no pads: the input is its own single phase
    std::vector<char> used;               // phases some tap reads: only those are filled
    std::vector<int64_t> col_lo, col_hi;  // per phase column b: the phase columns holding input

    int64_t plane() const { return qh * qw; }
};

void prepare_phases(const ConvGeometry& g, Phases& p) {
    p.sh = g.stride[1];
    p.sw = g.stride[2];
    const int64_t hp = g.in[1] + g.pad_lo[1] + g.pad_hi[1], wp = g.in[2] + g.pad_lo[2] + g.pad_hi[2];
    const bool unit = p.sh == 1 && p.sw == 1;
    p.qh = (hp + p.sh - 1) / p.sh;
    p.qw = unit ? g.in[2] + std::max(g.pad_lo[2], g.pad_hi[2]) : (wp + p.sw - 1) / p.sw;
    p.slack = unit ? g.pad_lo[2] : 0;
    p.identity = p.sh == 1 && p.sw == 1 && hp == g.in[1] && wp == g.in[2];
    p.used.assign(p.sh * p.sw, 0);
    for (int64_t kh = 0; kh < g.k[1]; ++kh)
        for (int64_t kw = 0; kw < g.k[2]; ++kw) p.used[((kh * g.dil[1]) % p.sh) * p.sw + (kw * g.dil[2]) % p.sw] = 1;
    p.col_lo.resize(p.sw);
    p.col_hi.resize(p.sw);
    for (int64_t b = 0; b < p.sw; ++b) valid_range(b - g.pad_lo[2], p.sw, g.in[2], p.qw, p.col_lo[b], p.col_hi[b]);
}

// Offset of kernel tap (kh, kw) from the start of a channel's phase-(0, 0) image, phases being
// `phase_stride` apart.
int64_t tap_offset(const ConvGeometry& g, const Phases& p, int64_t kh, int64_t kw, int64_t phase_stride) {
    const int64_t u = kh * g.dil[1], v = kw * g.dil[2];
    return ((u % p.sh) * p.sw + v % p.sw) * phase_stride + (u / p.sh) * p.qw + v / p.sw;
}

// The used phases of one input channel `xc`, phases `phase_stride` apart from `dst0`.
void fill_channel(const ConvGeometry& g, const Phases& p, const float* xc, float* dst0, int64_t phase_stride) {
    const int64_t ih_n = g.in[1], iw_n = g.in[2];
    for (int64_t a = 0; a < p.sh; ++a)
        for (int64_t b = 0; b < p.sw; ++b) {
            if (!p.used[a * p.sw + b]) continue;
            float* dst = dst0 + (a * p.sw + b) * phase_stride;
            const int64_t lo = p.col_lo[b], hi = p.col_hi[b];
            for (int64_t i = 0; i < p.qh; ++i, dst += p.qw) {
                const int64_t ih = i * p.sh + a - g.pad_lo[1];
                if (ih < 0 || ih >= ih_n || lo >= hi) {
                    std::fill(dst, dst + p.qw, 0.f);
                    continue;
                }
                const float* src = xc + ih * iw_n + lo * p.sw + b - g.pad_lo[2];
                std::fill(dst, dst + lo, 0.f);
                strided_copy(dst + lo, src, hi - lo, p.sw);
                std::fill(dst + hi, dst + p.qw, 0.f);
            }
        }
}

enum class ConvPath { Depthwise, Pointwise, Direct, Im2col, Batched };

constexpr int64_t kIm2colBudget = 1 << 18;   // floats of im2col columns per block (1 MB)
constexpr int64_t kWideBudget = 1 << 15;      // floats of wide output rows per direct block (128 KB)
constexpr int64_t kDepthwiseMaxTaps = 49;     // a single-channel conv with more taps takes a GEMM path
constexpr int64_t kFewPositions = 16;         // per image, below which a batch goes in one product

// A run of output columns [a, e) of one output row inside an im2col block: d0/h0 are the input
// depth/row of that output row's window origin, col the block column where the run starts.
struct Segment {
    int64_t d0, h0, a, e, col;
};

struct ConvState {
    ConvGeometry g;
    ConvPath path = ConvPath::Im2col;
    Phases phases;                   // depthwise and direct
    std::vector<int64_t> taps;       // depthwise and direct: tap_offset of each (kh, kw)
    int64_t block = 0;               // output positions per product (direct: wide positions)
    // In the node's scratch: direct: one batch item's phases [phase][channel] and the block's wide
    // output rows; im2col: the block's columns.
    size_t phases_at = 0, block_at = 0;
    size_t product_at = 0;           // batched: the product of every image's columns, [channel][image][position]
    std::vector<float> rows;         // depthwise: each worker's wide output rows and channel phases
    std::vector<Segment> segments;   // im2col: the current block's row runs
    std::vector<int64_t> w_lo, w_hi; // im2col: per kernel column kw, the valid output columns
    std::vector<int64_t> b_rows;     // the product's B rows: offset of each (channel, tap) row
    std::vector<PackedA> weights;    // per group: [out channel][channel x tap], packed
    bool packed_once = false;        // constant weights are packed at prepare
};

void pack_weights(const ConvGeometry& g, const float* w, std::vector<PackedA>& packed) {
    const int64_t mg = g.out_per_group(), kg = g.in_per_group() * g.taps();
    packed.resize(static_cast<size_t>(g.group));
    for (int64_t grp = 0; grp < g.group; ++grp) pack_a(w + grp * mg * kg, mg, kg, kg, packed[static_cast<size_t>(grp)]);
}

// Group grp's bias and the fused activation, applied as the product finishes each piece of C.
Epilogue epilogue(Node& n, int64_t grp) {
    const int64_t mg = n.state_as<ConvState>().g.out_per_group();
    return {n.input(2) ? n.in[2]->in<float>() + grp * mg : nullptr, n.fused ? &n : nullptr};
}

const std::vector<PackedA>& weights(Node& n) {
    ConvState& s = n.state_as<ConvState>();
    if (!s.packed_once) pack_weights(s.g, n.in[1]->in<float>(), s.weights);
    return s.weights;
}

// ---- direct path -------------------------------------------------------------------------------

// Wide output positions per block: the block's rows of every output channel stay in L2, and a
// block is whole column tiles.
int64_t direct_block(int64_t out_per_group) {
    constexpr int64_t q = kPackedColumnQuantum;
    return std::max<int64_t>(q, kWideBudget / out_per_group / q * q);
}

void run_direct(Node& n, const ExecContext& ctx) {
    ConvState& s = n.state_as<ConvState>();
    const ConvGeometry& g = s.g;
    const float* x = n.in[0]->in<float>();
    float* y = n.out[0]->out<float>();
    const std::vector<PackedA>& w = weights(n);
    const int64_t cg = g.in_per_group(), mg = g.out_per_group();
    const int64_t oh = g.out[1], ow = g.out[2], qw = s.phases.qw, plane = s.phases.plane();
    const int64_t positions = (oh - 1) * qw + ow;  // the last wide row needs no tail
    float* wide = scratch_at<float>(n, s.block_at);
    for (int64_t b = 0; b < g.batch; ++b) {
        const float* xb = x + b * g.in_ch * g.in_plane();
        if (!s.phases.identity) {
            float* data = scratch_at<float>(n, s.phases_at);
            parallel_for(ctx, g.in_ch, [&](int64_t c) {
                fill_channel(g, s.phases, xb + c * g.in_plane(), data + c * plane, g.in_ch * plane);
            });
            const int64_t end = s.phases.sh * s.phases.sw * g.in_ch * plane;
            std::fill(data + end, data + end + s.phases.slack, 0.f);
            xb = data;
        }
        for (int64_t grp = 0; grp < g.group; ++grp) {
            const Epilogue ep = epilogue(n, grp);
            float* yg = y + (b * g.out_ch + grp * mg) * oh * ow;
            const float* xg = xb + grp * cg * plane;
            if (qw == ow) {  // wide rows are the output rows
                packed_gemm(w[static_cast<size_t>(grp)], xg, s.b_rows.data(), positions, ep, yg, oh * ow, ctx);
                continue;
            }
            for (int64_t p0 = 0; p0 < positions; p0 += s.block) {
                const int64_t cols = std::min(s.block, positions - p0);
                packed_gemm(w[static_cast<size_t>(grp)], xg + p0, s.b_rows.data(), cols, ep, wide, cols, ctx);
                // Copy the valid columns of each wide row in the block.
                parallel_for(ctx, mg, [&](int64_t m) {
                    for (int64_t row = p0 / qw; row * qw < p0 + cols; ++row) {
                        const int64_t a = std::max(p0, row * qw), e = std::min(p0 + cols, row * qw + ow);
                        if (a < e)
                            std::memcpy(yg + m * oh * ow + row * ow + (a - row * qw), wide + m * cols + (a - p0),
                                        sizeof(float) * static_cast<size_t>(e - a));
                    }
                });
            }
        }
    }
}

// ---- im2col and pointwise paths ----------------------------------------------------------------

void block_segments(const ConvGeometry& g, int64_t j0, int64_t j1, std::vector<Segment>& segs) {
    segs.clear();
    const int64_t oh_n = g.out[1], ow_n = g.out[2];
    for (int64_t j = j0; j < j1;) {
        const int64_t row = j / ow_n, a = j - row * ow_n, e = std::min(ow_n, a + (j1 - j));
        segs.push_back({(row / oh_n) * g.stride[0] - g.pad_lo[0], (row % oh_n) * g.stride[1] - g.pad_lo[1], a, e,
                        j - j0});
        j += e - a;
    }
}

// The block's im2col rows (kd, kh, kw) of one input channel, `ld` apart.
void im2col_channel(const ConvState& s, const float* xc, float* col, int64_t ld) {
    const ConvGeometry& g = s.g;
    const int64_t sw = g.stride[2];
    for (int64_t kd = 0; kd < g.k[0]; ++kd)
        for (int64_t kh = 0; kh < g.k[1]; ++kh)
            for (int64_t kw = 0; kw < g.k[2]; ++kw, col += ld) {
                const int64_t off = kw * g.dil[2] - g.pad_lo[2];
                for (const Segment& seg : s.segments) {
                    float* d = col + seg.col;  // d[o - a] for output column o in [a, e)
                    const int64_t a = seg.a, e = seg.e;
                    const int64_t id = seg.d0 + kd * g.dil[0], ih = seg.h0 + kh * g.dil[1];
                    const int64_t lo = std::min(std::max(a, s.w_lo[kw]), e), hi = std::max(lo, std::min(e, s.w_hi[kw]));
                    if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || lo == hi) {
                        std::fill(d, d + (e - a), 0.f);
                        continue;
                    }
                    const float* src = xc + (id * g.in[1] + ih) * g.in[2] + lo * sw + off;
                    std::fill(d, d + (lo - a), 0.f);
                    strided_copy(d + (lo - a), src, hi - lo, sw);
                    std::fill(d + (hi - a), d + (e - a), 0.f);
                }
            }
}

void run_gemm(Node& n, const ExecContext& ctx) {
    ConvState& s = n.state_as<ConvState>();
    const ConvGeometry& g = s.g;
    const float* x = n.in[0]->in<float>();
    float* y = n.out[0]->out<float>();
    const std::vector<PackedA>& w = weights(n);
    const int64_t cg = g.in_per_group(), mg = g.out_per_group();
    const int64_t positions = g.out_plane(), in_plane = g.in_plane();
    const bool pointwise = s.path == ConvPath::Pointwise;
    for (int64_t b = 0; b < g.batch; ++b)
        for (int64_t grp = 0; grp < g.group; ++grp) {
            const float* xg = x + (b * g.in_ch + grp * cg) * in_plane;
            const Epilogue ep = epilogue(n, grp);
            float* yg = y + (b * g.out_ch + grp * mg) * positions;
            if (pointwise) {  // B's rows are the input planes
                packed_gemm(w[static_cast<size_t>(grp)], xg, s.b_rows.data(), positions, ep, yg, positions, ctx);
                continue;
            }
            float* col = scratch_at<float>(n, s.block_at);
            for (int64_t j0 = 0; j0 < positions; j0 += s.block) {
                const int64_t cols = std::min(s.block, positions - j0);
                block_segments(g, j0, j0 + cols, s.segments);
                parallel_for(ctx, cg, [&](int64_t c) {
                    im2col_channel(s, xg + c * in_plane, col + c * g.taps() * s.block, s.block);
                });
                packed_gemm(w[static_cast<size_t>(grp)], col, s.b_rows.data(), cols, ep, yg + j0, positions, ctx);
            }
        }
}

// A few output positions per image and several images (silero's sequence form: 8 frames of 1-4
// positions): one product over every image's im2col columns instead of one thin product per image,
// then each image's rows copied out (the same sums: the product is position-invariant).
void run_batched(Node& n, const ExecContext& ctx) {
    ConvState& s = n.state_as<ConvState>();
    const ConvGeometry& g = s.g;
    const float* x = n.in[0]->in<float>();
    float* y = n.out[0]->out<float>();
    const std::vector<PackedA>& w = weights(n);
    const int64_t cg = g.in_per_group(), mg = g.out_per_group();
    const int64_t positions = g.out_plane(), in_plane = g.in_plane(), cols = g.batch * positions;
    float* col = scratch_at<float>(n, s.block_at);
    float* product = scratch_at<float>(n, s.product_at);
    block_segments(g, 0, positions, s.segments);
    for (int64_t grp = 0; grp < g.group; ++grp) {
        for (int64_t b = 0; b < g.batch; ++b) {
            const float* xg = x + (b * g.in_ch + grp * cg) * in_plane;
            parallel_for(ctx, cg, [&](int64_t c) {
                im2col_channel(s, xg + c * in_plane, col + c * g.taps() * cols + b * positions, cols);
            });
        }
        packed_gemm(w[static_cast<size_t>(grp)], col, s.b_rows.data(), cols, epilogue(n, grp), product, cols, ctx);
        for (int64_t b = 0; b < g.batch; ++b)
            for (int64_t m = 0; m < mg; ++m)
                std::memcpy(y + (b * g.out_ch + grp * mg + m) * positions, product + m * cols + b * positions,
                            sizeof(float) * static_cast<size_t>(positions));
    }
}

// ---- depthwise path ----------------------------------------------------------------------------

// y[o] = bias + sum over taps t, in order, of w[t] * src[t][o], o in [0, n). Columns go in blocks
// of four vectors whose accumulators stay in registers while every tap adds into them (each input
// element loaded once per tap, y stored once); a ragged end recomputes the last full block or
// vector with the same arithmetic (vector_columns' rule), and a row under one vector goes column
// by column.
void depthwise_row(const float* const* src, const float* w, int64_t taps, float bias, int64_t n, float* __restrict y) {
    constexpr int64_t kBlock = 4 * kF32Lanes;
    auto block = [&](int64_t o) {
        f32v a0 = splatv(bias), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t t = 0; t < taps; ++t) {
            const float* s = src[t] + o;
            const f32v wt = splatv(w[t]);
            a0 += wt * loadv(s);
            a1 += wt * loadv(s + kF32Lanes);
            a2 += wt * loadv(s + 2 * kF32Lanes);
            a3 += wt * loadv(s + 3 * kF32Lanes);
        }
        storev(y + o, a0);
        storev(y + o + kF32Lanes, a1);
        storev(y + o + 2 * kF32Lanes, a2);
        storev(y + o + 3 * kF32Lanes, a3);
    };
    auto vector = [&](int64_t o) {
        f32v a = splatv(bias);
        for (int64_t t = 0; t < taps; ++t) a += splatv(w[t]) * loadv(src[t] + o);
        storev(y + o, a);
    };
    if (n >= kBlock) {
        int64_t o = 0;
        for (; o + kBlock <= n; o += kBlock) block(o);
        if (o < n) block(n - kBlock);
    } else if (n >= kF32Lanes) {
        int64_t o = 0;
        for (; o + kF32Lanes <= n; o += kF32Lanes) vector(o);
        if (o < n) vector(n - kF32Lanes);
    } else {
        for (int64_t o = 0; o < n; ++o) {
            float acc = bias;
            for (int64_t t = 0; t < taps; ++t) acc += w[t] * src[t][o];
            y[o] = acc;
        }
    }
}

// Each output plane is computed as one run over "wide" rows of phase width (whose columns past the
// output width are dropped when copying out), so short rows cost no per-row overhead. Workers take
// whole input channels, padding and splitting each into their own small phase buffer.
void run_depthwise(Node& n, const ExecContext& ctx) {
    ConvState& s = n.state_as<ConvState>();
    const ConvGeometry& g = s.g;
    const float* x = n.in[0]->in<float>();
    const float* w = n.in[1]->in<float>();
    const float* bias = n.input(2) ? n.in[2]->in<float>() : nullptr;
    float* y = n.out[0]->out<float>();
    const Phases& p = s.phases;
    const int64_t taps = g.taps(), oh_n = g.out[1], ow_n = g.out[2], multiplier = g.out_per_group();
    // Each worker's phases end with the slack, zeros since the vector was sized (never written).
    const int64_t wide_n = (oh_n - 1) * p.qw + ow_n, phases_n = p.identity ? 0 : p.sh * p.sw * p.plane() + p.slack;
    const int64_t channels = g.batch * g.in_ch;
    const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(ctx.threads, channels));
    const int64_t per_worker = (channels + workers - 1) / workers;
    if ((int64_t)s.rows.size() < workers * (wide_n + phases_n)) s.rows.resize(workers * (wide_n + phases_n));
    parallel_for(ctx, workers, [&](int64_t worker) {
        float* wide = s.rows.data() + worker * (wide_n + phases_n);
        float* phases = wide + wide_n;
        const float* src_small[64];
        std::vector<const float*> src_large(taps > 64 ? taps : 0);
        const float** src = taps > 64 ? src_large.data() : src_small;
        for (int64_t bc = worker * per_worker; bc < std::min(channels, (worker + 1) * per_worker); ++bc) {
            const float* xc = x + bc * g.in_plane();
            if (!p.identity) {
                fill_channel(g, p, xc, phases, p.plane());
                xc = phases;
            }
            for (int64_t t = 0; t < taps; ++t) src[t] = xc + s.taps[t];
            for (int64_t j = 0; j < multiplier; ++j) {
                const int64_t m = (bc % g.in_ch) * multiplier + j;
                const float* wm = w + m * taps;
                const float bm = bias ? bias[m] : 0.f;
                depthwise_row(src, wm, taps, bm, wide_n, wide);
                float* ym = y + ((bc / g.in_ch) * g.out_ch + m) * oh_n * ow_n;
                for (int64_t oh = 0; oh < oh_n; ++oh) std::memcpy(ym + oh * ow_n, wide + oh * p.qw, sizeof(float) * ow_n);
            }
        }
    });
}

// ---- prepare -----------------------------------------------------------------------------------

ConvPath choose_path(const ConvGeometry& g) {
    const bool planar = g.spatial <= 2;
    bool unit_stride = true, no_pad = true;
    for (int d = 0; d < 3; ++d) {
        unit_stride = unit_stride && g.stride[d] == 1;
        no_pad = no_pad && g.pad_lo[d] == 0 && g.pad_hi[d] == 0;
    }
    // One input channel with a long kernel (silero's STFT: 256 taps, 258 outputs) is a product
    // with many rows: the GEMM paths, not one long scalar row per output channel.
    const bool long_single = g.group == 1 && g.taps() > kDepthwiseMaxTaps;
    const int64_t batch_columns = g.in_per_group() * g.taps() * g.batch * g.out_plane();
    if (g.batch > 1 && g.group == 1 && g.out_plane() < kFewPositions && batch_columns <= kIm2colBudget)
        return ConvPath::Batched;
    if (planar && g.in_per_group() == 1 && g.group == g.in_ch && !long_single) return ConvPath::Depthwise;
    if (g.taps() == 1 && unit_stride && no_pad) return ConvPath::Pointwise;
    // Wide rows waste (phase width - output width) columns: fine unless the image is very narrow.
    // A handful of positions fill less than one column tile: im2col's product is as good there.
    const int64_t phase_w = (g.in[2] + g.pad_lo[2] + g.pad_hi[2] + g.stride[2] - 1) / g.stride[2];
    if (planar && g.out_plane() >= kFewPositions && (g.out[1] == 1 || 4 * phase_w <= 5 * g.out[2]))
        return ConvPath::Direct;
    return ConvPath::Im2col;
}

bool check_shapes(const Node& n, const ConvGeometry& g, std::string& err) {
    if (n.in[1]->dim(0) != g.out_ch || n.in[1]->dim(1) != g.in_per_group()) {
        err = "channels do not fit the weight shape and group";
        return false;
    }
    if (n.input(2) && n.in[2]->numel() != g.out_ch) {
        err = "bias size != output channels";
        return false;
    }
    return conv_output_fits(g, err);
}

bool prepare_conv(Node& n, std::string& err) {
    for (const Tensor* t : {n.in[0], n.in[1], n.input(2), n.out[0]}) {
        if (t && t->dtype != QNNB_FLOAT32) {
            err = "tensor '" + t->name + "' has dtype " + dtype_name(t->dtype) + "; expected float32";
            return false;
        }
    }
    ConvState& s = n.make_state<ConvState>();
    ConvGeometry& g = s.g;
    if (!read_conv_geometry(n, g, err) || !check_shapes(n, g, err)) return false;
    s.path = choose_path(g);
    const int64_t positions = g.out_plane(), cg = g.in_per_group(), taps = g.taps();
    if (s.path == ConvPath::Depthwise || s.path == ConvPath::Direct) {
        prepare_phases(g, s.phases);
        const Phases& p = s.phases;
        // Direct: phases of all channels, [phase][channel]; depthwise: one channel's phases.
        const int64_t phase_stride = s.path == ConvPath::Direct ? g.in_ch * p.plane() : p.plane();
        for (int64_t kh = 0; kh < g.k[1]; ++kh)
            for (int64_t kw = 0; kw < g.k[2]; ++kw) s.taps.push_back(tap_offset(g, p, kh, kw, phase_stride));
        if (s.path == ConvPath::Direct && !p.identity)
            s.phases_at = take_scratch(n, static_cast<size_t>(p.sh * p.sw * phase_stride + p.slack) * sizeof(float));
        // Depthwise: one worker's wide output rows and channel phases; run() adds more for more threads.
        if (s.path == ConvPath::Depthwise)
            s.rows.resize((g.out[1] - 1) * p.qw + g.out[2] + (p.identity ? 0 : p.sh * p.sw * p.plane() + p.slack));
    }
    if (s.path == ConvPath::Depthwise) return true;
    if (s.path == ConvPath::Direct) {
        for (int64_t c = 0; c < cg; ++c)
            for (int64_t t = 0; t < taps; ++t) s.b_rows.push_back(c * s.phases.plane() + s.taps[static_cast<size_t>(t)]);
        s.block = std::min((g.out[1] - 1) * s.phases.qw + g.out[2], direct_block(g.out_per_group()));
        s.block_at = take_scratch(n, static_cast<size_t>(g.out_per_group() * s.block) * sizeof(float));
    } else if (s.path == ConvPath::Pointwise) {
        for (int64_t c = 0; c < cg; ++c) s.b_rows.push_back(c * g.in_plane());
    } else {
        const bool batched = s.path == ConvPath::Batched;
        s.block = batched ? positions : std::min(positions, std::max<int64_t>(64, kIm2colBudget / (cg * taps)));
        const int64_t cols = batched ? g.batch * positions : s.block;
        for (int64_t r = 0; r < cg * taps; ++r) s.b_rows.push_back(r * cols);
        s.block_at = take_scratch(n, static_cast<size_t>(cg * taps * cols) * sizeof(float));
        if (batched) s.product_at = take_scratch(n, static_cast<size_t>(g.out_per_group() * cols) * sizeof(float));
        s.segments.reserve(s.block / g.out[2] + 2);
        s.w_lo.resize(g.k[2]);
        s.w_hi.resize(g.k[2]);
        for (int64_t kw = 0; kw < g.k[2]; ++kw)
            valid_range(kw * g.dil[2] - g.pad_lo[2], g.stride[2], g.in[2], g.out[2], s.w_lo[kw], s.w_hi[kw]);
    }
    if (n.in[1]->is_const()) {
        pack_weights(g, n.in[1]->in<float>(), s.weights);
        s.packed_once = true;
    }
    n.fused_in_kernel = true;  // every product path applies it (epilogue)
    return true;
}

void run_conv(Node& n, const ExecContext& ctx) {
    switch (n.state_as<ConvState>().path) {
        case ConvPath::Depthwise: run_depthwise(n, ctx); break;
        case ConvPath::Direct: run_direct(n, ctx); break;
        case ConvPath::Batched: run_batched(n, ctx); break;
        default: run_gemm(n, ctx); break;
    }
}

}  // namespace

// ConvTranspose lives in conv_transpose.cpp.
bool conv_transpose_prepare(Node& n, std::string& err);
void conv_transpose_run(Node& n, const ExecContext& ctx);

namespace {

const Kernel kKernels[] = {
    {"Conv", prepare_conv, run_conv},
    {"ConvTranspose", conv_transpose_prepare, conv_transpose_run},
};

}  // namespace

extern const KernelTable kCpuConvKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace qnnb
