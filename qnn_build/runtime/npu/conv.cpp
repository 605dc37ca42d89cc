// Integer Conv: docs/npu.md (N10)-(N11), fast paths (N15). ConvTranspose: conv_transpose.cpp.
//
// Conv output channel c of group g at output position o:
//   acc_j = sum over input channels ci of block j (all of the group's when not block-wise) and
//           taps t of (x[ci][o·s − pad + t·d] − zp_x) · w[c][ci][t]  (padding: x = zp_x, adds 0)
//   total = sum_j block_mult[c][j] · acc_j + bias[c];  q_y = clamp(requantize(total) + zp_y)
// Four ways to compute it, all giving the same bytes:
//  - conv_ref: the plain loops of the equation (QNNB_NPU_REFERENCE=1 at prepare selects it);
//  - vnni (8-bit activations x 8/4-bit per-channel weights; not depthwise: more than one input
//    channel per group, or one group, where a lone channel padded to 4 still beats the direct
//    loops): the input as zero-point-padded pixels [D][H][W][group][channel padded to 4], each
//    output position's window read in place (no im2col), weights packed once at prepare for
//    _mm512_dpbusd_epi32 (u8 x s8 -> s32), zp_x · sum(w) subtracted per channel;
//  - depthwise (8-bit activations, one input and one output channel per group): channels
//    innermost, conv_depthwise.h;
//  - direct (everything else): x − zp_x into a zero-padded buffer once per batch item, then per
//    output row vectorisable multiply-accumulate loops over the taps.
// Spatial dims are handled as 3D (D, H, W), with leading 1s for 1D/2D (core/window.h).
#include <algorithm>
#include <cstring>
#include <vector>

#include "../core/parallel.h"
#include "conv_common.h"
#include "conv_depthwise.h"
#include "conv_geometry.h"

namespace qnnb {
namespace npu {

void fill_padding(uint8_t* image, const ConvGeometry& g, const int64_t* pd, int64_t pixel, uint8_t value) {
    const int64_t row = pd[2] * pixel, plane = pd[1] * row;
    for (int64_t d = 0; d < pd[0]; ++d) {
        uint8_t* p = image + d * plane;
        if (d < g.pad_lo[0] || d >= g.pad_lo[0] + g.in[0]) {
            std::memset(p, value, static_cast<size_t>(plane));
            continue;
        }
        std::memset(p, value, static_cast<size_t>(g.pad_lo[1] * row));
        const int64_t below = g.pad_lo[1] + g.in[1];
        std::memset(p + below * row, value, static_cast<size_t>((pd[1] - below) * row));
        const int64_t left = g.pad_lo[2] * pixel, right = (g.pad_lo[2] + g.in[2]) * pixel;
        for (int64_t h = g.pad_lo[1]; h < below; ++h) {
            std::memset(p + h * row, value, static_cast<size_t>(left));
            std::memset(p + h * row + right, value, static_cast<size_t>(row - right));
        }
    }
}

bool check_operands(const Node& n, std::string& err) {
    if (!check_int_operand(n.input(0), err) || !check_int_output(n.output(0), err)) return false;
    if (n.in[0]->dtype != QNNB_UINT8 && n.in[0]->dtype != QNNB_UINT16) {
        err = "input must be an 8- or 16-bit activation";
        return false;
    }
    const Tensor* w = n.input(1);
    if (!w) {
        err = "missing weight";
        return false;
    }
    if (w->encoding.bitwidth == 16 && n.in[0]->encoding.bitwidth <= 8) {
        err = "16-bit weights with 8-bit activations are not supported by the npu (use w16a16, w8a8 or w8a16)";
        return false;
    }
    return true;
}

namespace {

enum class Path { Reference, Direct, Vnni, Depthwise };

struct ConvState {
    ConvGeometry g;
    Path path = Path::Reference;
    ChannelParams p;
    std::vector<int16_t> w;  // the weight's integers, storage order
    int32_t zp_x = 0;
    bool acc32 = true;       // one block's accumulator fits int32 (N10)
    int64_t block = 0;       // input channels per block (the group's cg when not block-wise)
    // direct: x − zp_x with zero padding, one batch item, [channel][Dp][Hp][Wp]
    int64_t pd[3] = {1, 1, 1};
    size_t padded_at = 0;  // in the node's scratch (int16 or int32 elements)
    // vnni: zp-padded pixels [Dp][Hp][Wp][group][cg4], in the node's scratch
    int64_t cg4 = 0, pixel = 0;
    size_t pixels_at = 0;
    bool folded = false;              // fold_lone_channel: the pixels are the input's own bytes
    std::vector<VnniWeights> vw;      // per group
    std::vector<int64_t> tap_off;     // per tap, bytes from a window origin
    std::vector<VnniRequant> rq;      // per group: bias − zp_x · sum(w), multipliers
    DepthwiseConv dw;                 // depthwise (conv_depthwise.h)
};

// Padded extent of one dim: every index a window reads (o · s + t · d for the output range),
// counted from the first padding element.
int64_t padded_extent(const ConvGeometry& g, int d) {
    return std::max(g.in[d] + g.pad_lo[d], (g.out[d] - 1) * g.stride[d] + (g.k[d] - 1) * g.dil[d] + 1);
}

// ---- reference: the equation's loops ------------------------------------------------------------

template <class TA, class TX, class TY>
void conv_ref(const ConvState& s, const TX* x, TY* y, const ExecContext& ctx) {
    const ConvGeometry& g = s.g;
    const int64_t cg = g.in_per_group(), mg = g.out_per_group(), taps = g.taps(), plane = g.out_plane();
    parallel_for(ctx, g.batch * g.out_ch, [&](int64_t bc) {
        const int64_t b = bc / g.out_ch, c = bc % g.out_ch, grp = c / mg;
        const int16_t* wc = s.w.data() + c * cg * taps;
        for (int64_t od = 0; od < g.out[0]; ++od)
            for (int64_t oh = 0; oh < g.out[1]; ++oh)
                for (int64_t ow = 0; ow < g.out[2]; ++ow) {
                    int64_t total = 0;
                    for (int64_t j = 0; j < cg / s.block; ++j) {
                        TA acc = 0;  // (N10): |acc| < 2^31 when TA is int32
                        for (int64_t ci = j * s.block; ci < (j + 1) * s.block; ++ci) {
                            const TX* xc = x + (b * g.in_ch + grp * cg + ci) * g.in_plane();
                            for (int64_t kd = 0; kd < g.k[0]; ++kd)
                                for (int64_t kh = 0; kh < g.k[1]; ++kh)
                                    for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                                        const int64_t id = od * g.stride[0] - g.pad_lo[0] + kd * g.dil[0];
                                        const int64_t ih = oh * g.stride[1] - g.pad_lo[1] + kh * g.dil[1];
                                        const int64_t iw = ow * g.stride[2] - g.pad_lo[2] + kw * g.dil[2];
                                        if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || iw < 0 || iw >= g.in[2])
                                            continue;  // padding: (zp_x − zp_x) · w = 0
                                        const TA xv = static_cast<TA>(xc[(id * g.in[1] + ih) * g.in[2] + iw]) - s.zp_x;
                                        acc += xv * static_cast<TA>(wc[ci * taps + (kd * g.k[1] + kh) * g.k[2] + kw]);
                                    }
                        }
                        total += static_cast<int64_t>(acc) * s.p.block_mult[c * s.p.blocks + j];  // (N11)
                    }
                    y[bc * plane + (od * g.out[1] + oh) * g.out[2] + ow] =
                        static_cast<TY>(s.p.out(c, s.p.sign * total + s.p.bias[c]));
                }
    });
}

// ---- direct: zero-padded x − zp_x, vectorisable rows ---------------------------------------------

template <class TS, class TX>
void fill_padded(const ConvState& s, const TX* xb, TS* dst, const ExecContext& ctx) {
    const ConvGeometry& g = s.g;
    const int64_t pplane = s.pd[0] * s.pd[1] * s.pd[2];
    parallel_for(ctx, g.in_ch, [&](int64_t ci) {
        TS* d = dst + ci * pplane;
        std::fill(d, d + pplane, TS{0});
        const TX* src = xb + ci * g.in_plane();
        for (int64_t id = 0; id < g.in[0]; ++id)
            for (int64_t ih = 0; ih < g.in[1]; ++ih) {
                TS* row = d + ((id + g.pad_lo[0]) * s.pd[1] + ih + g.pad_lo[1]) * s.pd[2] + g.pad_lo[2];
                const TX* in = src + (id * g.in[1] + ih) * g.in[2];
                for (int64_t iw = 0; iw < g.in[2]; ++iw) row[iw] = static_cast<TS>(static_cast<int32_t>(in[iw]) - s.zp_x);
            }
    });
}

constexpr int64_t kRowChunk = 256;

template <class TA, class TS, class TY>
void conv_direct_item(const ConvState& s, const TS* xs, TY* yb, const ExecContext& ctx) {
    const ConvGeometry& g = s.g;
    const int64_t cg = g.in_per_group(), mg = g.out_per_group(), taps = g.taps(), plane = g.out_plane();
    const int64_t pplane = s.pd[0] * s.pd[1] * s.pd[2], sw = g.stride[2];
    const int64_t rows = g.out[0] * g.out[1];
    parallel_for(ctx, g.out_ch * rows, [&](int64_t task) {
        const int64_t c = task / rows, row = task % rows, od = row / g.out[1], oh = row % g.out[1];
        const int64_t grp = c / mg;
        const int16_t* wc = s.w.data() + c * cg * taps;
        for (int64_t ow0 = 0; ow0 < g.out[2]; ow0 += kRowChunk) {
            const int64_t len = std::min(kRowChunk, g.out[2] - ow0);
            int64_t total[kRowChunk];
            TA acc[kRowChunk];
            for (int64_t i = 0; i < len; ++i) total[i] = 0;
            for (int64_t j = 0; j < cg / s.block; ++j) {
                for (int64_t i = 0; i < len; ++i) acc[i] = 0;
                for (int64_t ci = j * s.block; ci < (j + 1) * s.block; ++ci) {
                    const TS* xp = xs + (grp * cg + ci) * pplane;
                    for (int64_t kd = 0; kd < g.k[0]; ++kd)
                        for (int64_t kh = 0; kh < g.k[1]; ++kh) {
                            const TS* src_row = xp + ((od * g.stride[0] + kd * g.dil[0]) * s.pd[1] + oh * g.stride[1] +
                                                      kh * g.dil[1]) * s.pd[2] + ow0 * sw;
                            for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                                const TA wv = wc[ci * taps + (kd * g.k[1] + kh) * g.k[2] + kw];
                                if (wv == 0) continue;
                                const TS* src = src_row + kw * g.dil[2];
                                if (sw == 1) {
                                    for (int64_t i = 0; i < len; ++i) acc[i] += static_cast<TA>(src[i]) * wv;
                                } else {
                                    for (int64_t i = 0; i < len; ++i) acc[i] += static_cast<TA>(src[i * sw]) * wv;
                                }
                            }
                        }
                }
                const int64_t m = s.p.block_mult[c * s.p.blocks + j];
                for (int64_t i = 0; i < len; ++i) total[i] += static_cast<int64_t>(acc[i]) * m;
            }
            TY* out = yb + c * plane + row * g.out[2] + ow0;
            const int64_t bias = s.p.bias[c];
            for (int64_t i = 0; i < len; ++i) out[i] = static_cast<TY>(s.p.out_fast(c, s.p.sign * total[i] + bias));
        }
    });
}

template <class TX, class TY>
void run_direct(Node& n, ConvState& s, const ExecContext& ctx) {
    const ConvGeometry& g = s.g;
    const TX* x = n.in[0]->in<TX>();
    TY* y = n.out[0]->out<TY>();
    for (int64_t b = 0; b < g.batch; ++b) {
        const TX* xb = x + b * g.in_ch * g.in_plane();
        TY* yb = y + b * g.out_ch * g.out_plane();
        if (sizeof(TX) == 1) {  // |x − zp| <= 255: int16 elements
            int16_t* xs = scratch_at<int16_t>(n, s.padded_at);
            fill_padded(s, xb, xs, ctx);
            if (s.acc32) conv_direct_item<int32_t>(s, xs, yb, ctx);
            else conv_direct_item<int64_t>(s, xs, yb, ctx);
        } else {
            int32_t* xs = scratch_at<int32_t>(n, s.padded_at);
            fill_padded(s, xb, xs, ctx);
            if (s.acc32) conv_direct_item<int32_t>(s, xs, yb, ctx);
            else conv_direct_item<int64_t>(s, xs, yb, ctx);
        }
    }
}

// ---- vnni: u8 x s8 on _mm512_dpbusd_epi32 ---------------------------------------------------------


void prepare_vnni(Node& n, ConvState& s) {
    const ConvGeometry& g = s.g;
    const int64_t cg = g.in_per_group(), mg = g.out_per_group(), taps = g.taps();
    s.cg4 = (cg + 3) / 4 * 4;
    s.pixel = g.group * s.cg4;
    // Padding pixels hold the zero point (they add zp_x · w, removed with the rest of zp_x · sum(w)).
    s.pixels_at = take_scratch(n, static_cast<size_t>(s.pd[0] * s.pd[1] * s.pd[2] * s.pixel));
    s.vw.resize(static_cast<size_t>(g.group));
    s.rq.resize(static_cast<size_t>(g.group));
    for (int64_t grp = 0; grp < g.group; ++grp) {
        const int16_t* wg = s.w.data() + grp * mg * cg * taps;
        VnniWeights& vw = s.vw[static_cast<size_t>(grp)];
        pack_vnni(n, static_cast<uint32_t>(2 * grp), mg, taps, s.cg4,
                  [&](int64_t c, int64_t t, int64_t k) { return k < cg ? wg[(c * cg + k) * taps + t] : 0; }, vw);
        std::vector<int64_t> comp(static_cast<size_t>(mg));
        for (int64_t c = 0; c < mg; ++c) comp[c] = s.p.bias[grp * mg + c] - static_cast<int64_t>(s.zp_x) * vw.colsum[c];
        prepare_requant(s.p, grp * mg, comp, false, s.rq[static_cast<size_t>(grp)]);
    }
    for (int64_t kd = 0; kd < g.k[0]; ++kd)
        for (int64_t kh = 0; kh < g.k[1]; ++kh)
            for (int64_t kw = 0; kw < g.k[2]; ++kw)
                s.tap_off.push_back(((kd * g.dil[0] * s.pd[1] + kh * g.dil[1]) * s.pd[2] + kw * g.dil[2]) * s.pixel);
}

// vnni with a lone input channel (one group) whose window along W steps in whole quads (silero's
// STFT: kernel 256, stride 128): four consecutive samples become one pixel of four channels, so the
// window is k/4 taps of 4 channels instead of k taps padded from 1 channel to 4 with zero weights
// (the same products, a quarter of the work), and the staged pixels are the input rows as they are.
void fold_lone_channel(ConvState& s) {
    ConvGeometry& g = s.g;
    if (g.in_ch != 1 || g.group != 1 || g.dil[2] != 1) return;
    for (int64_t v : {g.in[2], g.k[2], g.stride[2], g.pad_lo[2], g.pad_hi[2]})
        if (v % 4) return;
    const int64_t taps = g.taps(), kw = g.k[2];
    std::vector<int16_t> w(s.w.size());
    for (int64_t c = 0; c < g.out_ch; ++c)
        for (int64_t t = 0; t < taps; ++t)  // w[c][0][t] -> w'[c][t % kw % 4][t with kw / 4 taps along W]
            w[(c * 4 + t % kw % 4) * (taps / 4) + t / kw * (kw / 4) + t % kw / 4] = s.w[c * taps + t];
    s.w.swap(w);
    g.in_ch = 4;
    for (int64_t* v : {&g.in[2], &g.k[2], &g.stride[2], &g.pad_lo[2], &g.pad_hi[2]}) *v /= 4;
    s.pd[2] = padded_extent(g, 2);
    s.folded = true;
}

template <class TY>
void run_vnni(Node& n, ConvState& s, const ExecContext& ctx) {
    const ConvGeometry& g = s.g;
    const uint8_t* x = n.in[0]->in<uint8_t>();
    TY* y = n.out[0]->out<TY>();
    const int64_t cg = g.in_per_group(), mg = g.out_per_group(), plane = g.out_plane();
    const int64_t chunks = (plane + kPositionChunk - 1) / kPositionChunk;
    uint8_t* pixels = scratch_at<uint8_t>(n, s.pixels_at);
    const uint8_t zp = static_cast<uint8_t>(s.zp_x);
    fill_padding(pixels, g, s.pd, s.pixel, zp);
    for (int64_t b = 0; b < g.batch; ++b) {
        const uint8_t* xb = x + b * g.in_ch * g.in_plane();
        // The input's pixels: [D][H][W][group][cg4] at offset pad_lo (the cg4 − cg tail: zp too).
        parallel_for(ctx, g.in[0] * g.in[1], [&](int64_t r) {
            const int64_t id = r / g.in[1], ih = r % g.in[1];
            const int64_t at = ((id + g.pad_lo[0]) * s.pd[1] + ih + g.pad_lo[1]) * s.pd[2] + g.pad_lo[2];
            uint8_t* row = pixels + at * s.pixel;
            if (s.folded) return (void)std::memcpy(row, xb + (id * g.in[1] + ih) * g.in[2] * 4, static_cast<size_t>(g.in[2] * 4));
            const uint8_t* src = xb + (id * g.in[1] + ih) * g.in[2];
            for (int64_t grp = 0; grp < g.group; ++grp)
                stage_pixels(src + grp * cg * g.in_plane(), g.in_plane(), cg, g.in[2], row + grp * s.cg4, s.pixel, s.cg4, zp);
        });
        TY* yb = y + b * g.out_ch * plane;
        parallel_for(ctx, g.group * chunks, [&](int64_t task) {
            const int64_t grp = task / chunks, p0 = (task % chunks) * kPositionChunk;
            const int64_t count = std::min(kPositionChunk, plane - p0);
            int64_t origin[kPositionChunk];
            for (int64_t i = 0; i < count; ++i) {
                const int64_t p = p0 + i, ow = p % g.out[2], oh = (p / g.out[2]) % g.out[1], od = p / (g.out[2] * g.out[1]);
                origin[i] = ((od * g.stride[0] * s.pd[1] + oh * g.stride[1]) * s.pd[2] + ow * g.stride[2]) * s.pixel + grp * s.cg4;
            }
            const VnniWeights& vw = s.vw[static_cast<size_t>(grp)];
            const VnniRequant& rq = s.rq[static_cast<size_t>(grp)];
            alignas(64) int32_t acc[kVnniRows * kVnniBlock], q[kVnniRows * kVnniBlock];
            ChunkStage<TY> stage;
            for (int64_t cb = 0; cb < vw.cblocks; ++cb) {
                const int64_t c0 = cb * kVnniBlock, cn = std::min<int64_t>(kVnniBlock, mg - c0);
                for (int64_t r0 = 0; r0 < count; r0 += kVnniRows) {
                    const int64_t rn = std::min<int64_t>(kVnniRows, count - r0);
                    const uint8_t* rows[kVnniRows];
                    for (int r = 0; r < kVnniRows; ++r) rows[r] = pixels + origin[r0 + std::min<int64_t>(r, rn - 1)];
                    vnni_block(vw, cb, rows, s.tap_off.data(), acc);
                    vnni_requant(rq, c0, vw.vectors(cb), acc, static_cast<int>(rn), q);  // (N2)-(N3)
                    stage.put(q, r0, rn, cn);
                }
                stage.copy_out(yb + (grp * mg + c0) * plane + p0, plane, count, cn);
            }
        });
    }
}

bool prepare_conv(Node& n, std::string& err) {
    if (!check_operands(n, err)) return false;
    ConvState& s = n.make_state<ConvState>();
    ConvGeometry& g = s.g;
    if (!read_conv_geometry(n, g, err)) return false;
    const Tensor* w = n.in[1];
    if (w->dim(0) != g.out_ch || w->dim(1) != g.in_per_group()) {
        err = "channels do not fit the weight shape and group";
        return false;
    }
    if (!conv_output_fits(g, err)) return false;
    int32_t wmax = 0;
    if (!unpack_weight(w, s.w, wmax, err)) return false;
    if (w->encoding.block_axis >= 0 && w->encoding.block_axis != 1) {
        err = "a block-wise Conv weight must be blocked along its input channels (axis 1)";
        return false;
    }
    if (!read_channel_params(n, g.out_ch, w, n.input(2), s.p, err)) return false;
    s.zp_x = zero_point(*n.in[0]);
    s.block = s.p.blockwise() ? s.p.block_size : g.in_per_group();
    if (g.in_per_group() % s.block) {
        err = "block size does not divide the input channels per group";
        return false;
    }
    const int64_t x_max = operand_max(*n.in[0]);
    if (!check_total_bound(s.p, x_max, wmax, g.in_per_group() * g.taps(), err)) return false;
    s.acc32 = fits_int32(x_max, wmax, s.block * g.taps());
    for (int d = 0; d < 3; ++d) s.pd[d] = padded_extent(g, d);
    const bool vnni = QNNB_NPU_BLOCK && n.in[0]->dtype == QNNB_UINT8 && wmax <= 128 && !s.p.blockwise() &&
                      s.p.sign == 1 && (g.in_per_group() > 1 || g.group == 1) && fits_int32(255, 128, g.in_per_group() * g.taps());
    if (force_reference()) {
        s.path = Path::Reference;
    } else if (vnni) {
        s.path = Path::Vnni;
        fold_lone_channel(s);
        prepare_vnni(n, s);
    } else if (n.in[0]->dtype == QNNB_UINT8 && prepare_depthwise(n, g, s.pd, s.p, s.w, wmax, s.zp_x, s.dw)) {
        s.path = Path::Depthwise;
    } else {
        s.path = Path::Direct;
        const int64_t elems = g.in_ch * s.pd[0] * s.pd[1] * s.pd[2];
        s.padded_at = take_scratch(n, static_cast<size_t>(elems) * (n.in[0]->dtype == QNNB_UINT8 ? 2 : 4));
    }
    if (s.path == Path::Vnni || s.path == Path::Depthwise) std::vector<int16_t>().swap(s.w);  // packed copies hold them
    return true;
}

void run_conv(Node& n, const ExecContext& ctx) {
    ConvState& s = n.state_as<ConvState>();
    with_act_types(n, [&](auto tx, auto ty) {
        using TX = decltype(tx);
        using TY = decltype(ty);
        switch (s.path) {
            case Path::Vnni:
                if constexpr (sizeof(TX) == 1) run_vnni<TY>(n, s, ctx);
                break;
            case Path::Depthwise:
                if constexpr (sizeof(TX) == 1)
                    run_depthwise(s.dw, scratch_at<uint8_t>(n, s.dw.x_at), n.in[0]->in<uint8_t>(), n.out[0]->out<TY>(),
                                  sizeof(TY) == 1, ctx);
                break;
            case Path::Direct: run_direct<TX, TY>(n, s, ctx); break;
            default:
                if (s.acc32) conv_ref<int32_t>(s, n.in[0]->in<TX>(), n.out[0]->out<TY>(), ctx);
                else conv_ref<int64_t>(s, n.in[0]->in<TX>(), n.out[0]->out<TY>(), ctx);
                break;
        }
    });
}

const Kernel kKernels[] = {
    {"Conv", prepare_conv, run_conv},
};

}  // namespace

extern const KernelTable kNpuConvKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace npu
}  // namespace qnnb
