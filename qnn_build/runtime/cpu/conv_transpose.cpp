// ConvTranspose: float32, 1D/2D/3D, groups, strides, dilations, explicit pads, optional bias. The
// rule resolved output_shape/output_padding/auto_pad into pads and the output shape, so the kernel
// only scatters: for a block of input positions, one product gives every (output channel, kernel
// tap) contribution (W^T x), and col2im adds each into the output position it lands on. Each
// output channel is accumulated by one thread, in a fixed order. W^T is packed once at prepare when
// the weight is constant (core/packed_gemm.h) and the product reads the input planes where they
// lie: a per-call sgemm repacked all of W^T for every block (ViT's 384x256x4x4 upconv: 6 MB per
// block of 64 positions).
// Spatial dims are handled as 3D (D, H, W), with leading 1s for 1D/2D. Its kernel entry is in
// conv.cpp's table.
#include <algorithm>
#include <vector>

#include "../core/packed_gemm.h"
#include "../core/parallel.h"
#include "../core/window.h"

namespace qnnb {
namespace {

constexpr int64_t kColumnBudget = 1 << 18;  // floats of product output per block (1 MB)


// A run of input columns [a, e) of input row (d, h) in a block, starting at block column `col`.
struct Segment {
    int64_t d, h, a, e, col;
};

// With a column stride sw > 1, contributions are accumulated into the output split by column
// phase, [channel][od][oh][phase][qw] with output column ow = j * sw + phase, so that each tap adds
// a unit-stride run; the phases are interleaved into the output at the end.
struct TransposeState {
    ConvGeometry g;
    int64_t block = 0;                // input positions per product block
    size_t columns_at = 0;            // in the node's scratch: product output [out channel][tap][block position]
    std::vector<PackedA> weights;     // per group: W^T, [out channel x tap][input channel], packed
    bool packed_once = false;         // constant weights are packed at prepare
    std::vector<int64_t> b_rows;      // the product's B rows: input channel c's plane
    std::vector<Segment> segments;    // the current block's input row runs
    std::vector<int64_t> w_lo, w_hi;  // per kernel column kw: input columns landing inside the output
    std::vector<int64_t> w_dst;       // per kw: where input column 0 lands (in its phase row when sw > 1)
    int64_t qw = 0;                   // phase row length (sw > 1)
    size_t phased_at = 0;             // in the scratch: one group's output split by column phase (sw > 1)
};

bool read_geometry(const Node& n, ConvGeometry& g, std::string& err) {
    if (!read_conv_geometry(n, g, err)) return false;
    const Tensor* w = n.in[1];
    if (w->dim(0) != g.in_ch || w->dim(1) != g.out_per_group()) {
        err = "channels do not fit the weight shape and group";
        return false;
    }
    return true;
}

void pack_weights(const ConvGeometry& g, const float* w, std::vector<PackedA>& packed) {
    const int64_t cg = g.in_ch / g.group, rows = (g.out_ch / g.group) * g.taps();
    std::vector<float> wt(static_cast<size_t>(rows * cg));
    packed.resize(static_cast<size_t>(g.group));
    for (int64_t grp = 0; grp < g.group; ++grp) {
        const float* wg = w + grp * cg * rows;  // [c][(m, tap)]
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cg; ++c) wt[static_cast<size_t>(r * cg + c)] = wg[c * rows + r];
        pack_a(wt.data(), rows, cg, cg, packed[static_cast<size_t>(grp)]);
    }
}

void block_segments(const ConvGeometry& g, int64_t j0, int64_t j1, std::vector<Segment>& segs) {
    segs.clear();
    const int64_t ih_n = g.in[1], iw_n = g.in[2];
    for (int64_t j = j0; j < j1;) {
        const int64_t row = j / iw_n, a = j - row * iw_n, e = std::min(iw_n, a + (j1 - j));
        segs.push_back({row / ih_n, row % ih_n, a, e, j - j0});
        j += e - a;
    }
}

// Adds the block's contributions of one output channel (rows [tap][position] of `cols`) into its
// output volume `y` (its phase-split volume when sw > 1).
void col2im_channel(const TransposeState& s, const float* cols, int64_t ld, float* y) {
    const ConvGeometry& g = s.g;
    const int64_t sw = g.stride[2];
    const int64_t row_len = sw > 1 ? sw * s.qw : g.out[2];
    for (int64_t kd = 0; kd < g.k[0]; ++kd)
        for (int64_t kh = 0; kh < g.k[1]; ++kh)
            for (int64_t kw = 0; kw < g.k[2]; ++kw, cols += ld) {
                for (const Segment& seg : s.segments) {
                    const int64_t od = seg.d * g.stride[0] - g.pad_lo[0] + kd * g.dil[0];
                    const int64_t oh = seg.h * g.stride[1] - g.pad_lo[1] + kh * g.dil[1];
                    const int64_t lo = std::max(seg.a, s.w_lo[kw]), hi = std::min(seg.e, s.w_hi[kw]);
                    if (od < 0 || od >= g.out[0] || oh < 0 || oh >= g.out[1] || lo >= hi) continue;
                    const float* src = cols + seg.col + (lo - seg.a);
                    float* dst = y + ((od * g.out[1] + oh) * row_len + (s.w_dst[kw] + lo));
                    for (int64_t i = 0; i < hi - lo; ++i) dst[i] += src[i];
                }
            }
}

// One output channel's rows from its phase-split rows: y[j * sw + b] = phased[b][j].
void interleave_channel(const TransposeState& s, const float* phased, float* y) {
    const int64_t sw = s.g.stride[2], ow_n = s.g.out[2], qw = s.qw;
    for (int64_t r = 0; r < s.g.out[0] * s.g.out[1]; ++r, phased += sw * qw, y += ow_n) {
        if (sw == 2) {
            const float* p0 = phased;
            const float* p1 = phased + qw;
            const int64_t pairs = ow_n / 2;
            for (int64_t j = 0; j < pairs; ++j) {
                y[2 * j] = p0[j];
                y[2 * j + 1] = p1[j];
            }
            if (ow_n % 2) y[ow_n - 1] = p0[pairs];
        } else {
            for (int64_t b = 0; b < sw; ++b)
                for (int64_t j = 0; j * sw + b < ow_n; ++j) y[j * sw + b] = phased[b * qw + j];
        }
    }
}

void run_conv_transpose(Node& n, const ExecContext& ctx) {
    TransposeState& s = n.state_as<TransposeState>();
    const ConvGeometry& g = s.g;
    const float* x = n.in[0]->in<float>();
    if (!s.packed_once) pack_weights(g, n.in[1]->in<float>(), s.weights);
    const float* bias = n.input(2) ? n.in[2]->in<float>() : nullptr;
    float* y = n.out[0]->out<float>();
    const int64_t cg = g.in_ch / g.group, mg = g.out_ch / g.group, taps = g.taps();
    const int64_t in_plane = g.in_plane(), out_plane = g.out_plane();
    const bool phased = g.stride[2] > 1;
    float* columns = scratch_at<float>(n, s.columns_at);
    const int64_t target_plane = phased ? g.out[0] * g.out[1] * g.stride[2] * s.qw : out_plane;
    for (int64_t b = 0; b < g.batch; ++b)
        for (int64_t grp = 0; grp < g.group; ++grp) {
            const float* xg = x + (b * g.in_ch + grp * cg) * in_plane;
            const PackedA& wg = s.weights[static_cast<size_t>(grp)];
            float* yg = y + (b * g.out_ch + grp * mg) * out_plane;
            float* target = phased ? scratch_at<float>(n, s.phased_at) : yg;
            parallel_for(ctx, mg, [&](int64_t m) {
                float* t = target + m * target_plane;
                std::fill(t, t + target_plane, bias ? bias[grp * mg + m] : 0.f);
            });
            for (int64_t j0 = 0; j0 < in_plane; j0 += s.block) {
                const int64_t cols = std::min(s.block, in_plane - j0);
                // columns[(m, tap)][j] = sum over c of W[c][m][tap] * x[c][j]
                packed_gemm(wg, xg + j0, s.b_rows.data(), cols, Epilogue{}, columns, cols, ctx);
                block_segments(g, j0, j0 + cols, s.segments);
                parallel_for(ctx, mg, [&](int64_t m) {
                    col2im_channel(s, columns + m * taps * cols, cols, target + m * target_plane);
                });
            }
            if (phased)
                parallel_for(ctx, mg, [&](int64_t m) {
                    interleave_channel(s, target + m * target_plane, yg + m * out_plane);
                });
        }
}

bool prepare_conv_transpose(Node& n, std::string& err) {
    for (const Tensor* t : {n.in[0], n.in[1], n.input(2), n.out[0]}) {
        if (t && t->dtype != QNNB_FLOAT32) {
            err = "tensor '" + t->name + "' has dtype " + dtype_name(t->dtype) + "; expected float32";
            return false;
        }
    }
    TransposeState& s = n.make_state<TransposeState>();
    ConvGeometry& g = s.g;
    if (!read_geometry(n, g, err)) return false;
    if (n.input(2) && n.in[2]->numel() != g.out_ch) {
        err = "bias size != output channels";
        return false;
    }
    const int64_t rows = (g.out_ch / g.group) * g.taps();
    constexpr int64_t q = kPackedColumnQuantum;
    s.block = std::min(g.in_plane(), std::max<int64_t>(q, kColumnBudget / rows / q * q));
    s.columns_at = take_scratch(n, static_cast<size_t>(rows * s.block) * sizeof(float));
    s.segments.reserve(s.block / g.in[2] + 2);
    for (int64_t c = 0; c < g.in_ch / g.group; ++c) s.b_rows.push_back(c * g.in_plane());
    if (n.in[1]->is_const()) {
        pack_weights(g, n.in[1]->in<float>(), s.weights);
        s.packed_once = true;
    }
    const int64_t sw = g.stride[2];
    s.w_lo.resize(g.k[2]);
    s.w_hi.resize(g.k[2]);
    s.w_dst.resize(g.k[2]);
    for (int64_t kw = 0; kw < g.k[2]; ++kw) {
        const int64_t off = kw * g.dil[2] - g.pad_lo[2];  // output column of input column 0
        valid_range(off, sw, g.out[2], g.in[2], s.w_lo[kw], s.w_hi[kw]);  // input columns landing in the output
        if (sw == 1) {
            s.w_dst[kw] = off;
        } else {
            s.qw = (g.out[2] + sw - 1) / sw;
            const int64_t phase = ((off % sw) + sw) % sw;
            s.w_dst[kw] = phase * s.qw + (off - phase) / sw;  // phase row, then j = i + floor(off / sw)
        }
    }
    if (sw > 1) {
        const int64_t phased = (g.out_ch / g.group) * g.out[0] * g.out[1] * sw * s.qw;
        s.phased_at = take_scratch(n, static_cast<size_t>(phased) * sizeof(float));
    }
    return true;
}

}  // namespace

// Listed in conv.cpp's table (kCpuConvKernels).
bool conv_transpose_prepare(Node& n, std::string& err) { return prepare_conv_transpose(n, err); }
void conv_transpose_run(Node& n, const ExecContext& ctx) { run_conv_transpose(n, ctx); }

}  // namespace qnnb
