// Integer ConvTranspose: docs/npu.md (N12), fast paths (N15). Three ways, all giving the same bytes:
//  - conv_transpose_ref: the gather loops of the equation (QNNB_NPU_REFERENCE=1, block-wise weights);
//  - block (8-bit activations x 8/4-bit per-channel weights): one product per input pixel and
//    (tap, output channel) column on the VNNI/dotprod block kernel, then each column added to the
//    output position its tap reaches, then the vector requantization; when no two taps reach the
//    same output (stride >= the dilated kernel along every dim, the usual 2x2/2 upsampling) each
//    output is one column entry, requantized straight from the columns;
//  - scatter (everything else): each input pixel scattered into the outputs its taps reach.
#include <algorithm>
#include <cstring>
#include <vector>

#include "../core/parallel.h"
#include "conv_common.h"
#include "conv_geometry.h"

namespace qnnb {
namespace npu {
namespace {

// Output position o of channel c = g · mg + m gathers input position i along each dim where
// i · s − pad + t · d = o, from the group's input channels ci: w[ci][m][t]. Block j = ci / B over
// the weight's axis 0 (all input channels).

struct TransposeState {
    ConvGeometry g;
    ChannelParams p;
    std::vector<int16_t> w;
    int32_t zp_x = 0;
    bool acc32 = true;
    bool scatter = false;  // the fast path below; block-wise weights and QNNB_NPU_REFERENCE take the loops
    bool block = false;    // the block path
    // block: per group the weights as columns t · mg + m over K = cg. In the node's scratch: pixels
    // [in plane][group][cg4] (the cg4 − cg pad bytes 0); cols [group][in plane][cstride]: each pixel's
    // column sums less zp_x · colsum; planes [group][channel block][out plane][lanes]: the output
    // accumulators.
    int64_t cg4 = 0, cpad = 0, mblocks = 0;
    int64_t cstride = 0;  // a pixel's columns in cols: mg · taps rounded up to the 16 the kernel writes
    std::vector<VnniWeights> vw;
    std::vector<VnniRequant> rq;  // per group: bias, multipliers
    std::vector<int32_t> zpw;     // per group, per column: zp_x · colsum
    size_t pixels_at = 0, cols_at = 0, planes_at = 0;
    int64_t lanes = 0;  // accumulators per output position: 64, fewer when mg < 64 (16 per vector)
    // disjoint taps: per dim, output index o comes from input index i and tap k as from[d][o] =
    // i · k[d] + k, or -1 when no tap reaches o (the output is the bias alone); wcol[ow]: the
    // offset i · cstride + k · mg of output column ow in its pixel row's columns, or -1.
    bool disjoint = false;
    std::vector<int64_t> from[3], wcol;
};

template <class TA, class TX, class TY>
void conv_transpose_ref(const TransposeState& s, const TX* x, TY* y, const ExecContext& ctx) {
    const ConvGeometry& g = s.g;
    const int64_t cg = g.in_per_group(), mg = g.out_per_group(), taps = g.taps(), plane = g.out_plane();
    const int64_t block = s.p.blockwise() ? s.p.block_size : g.in_ch;
    parallel_for(ctx, g.batch * g.out_ch, [&](int64_t bc) {
        const int64_t b = bc / g.out_ch, c = bc % g.out_ch, grp = c / mg, m = c % mg;
        for (int64_t od = 0; od < g.out[0]; ++od)
            for (int64_t oh = 0; oh < g.out[1]; ++oh)
                for (int64_t ow = 0; ow < g.out[2]; ++ow) {
                    int64_t total = 0;
                    TA acc = 0;  // (N10): |acc| < 2^31 when TA is int32
                    int64_t j = (grp * cg) / block;
                    for (int64_t ci = grp * cg; ci < (grp + 1) * cg; ++ci) {
                        if (ci / block != j) {  // (N11): the block ends
                            total += static_cast<int64_t>(acc) * s.p.block_mult[c * s.p.blocks + (s.p.blockwise() ? j : 0)];
                            acc = 0;
                            j = ci / block;
                        }
                        const TX* xc = x + (b * g.in_ch + ci) * g.in_plane();
                        const int16_t* wc = s.w.data() + (ci * mg + m) * taps;
                        for (int64_t kd = 0; kd < g.k[0]; ++kd) {
                            const int64_t nd = od + g.pad_lo[0] - kd * g.dil[0];
                            if (nd < 0 || nd % g.stride[0] || nd / g.stride[0] >= g.in[0]) continue;
                            for (int64_t kh = 0; kh < g.k[1]; ++kh) {
                                const int64_t nh = oh + g.pad_lo[1] - kh * g.dil[1];
                                if (nh < 0 || nh % g.stride[1] || nh / g.stride[1] >= g.in[1]) continue;
                                for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                                    const int64_t nw = ow + g.pad_lo[2] - kw * g.dil[2];
                                    if (nw < 0 || nw % g.stride[2] || nw / g.stride[2] >= g.in[2]) continue;
                                    const int64_t i = ((nd / g.stride[0]) * g.in[1] + nh / g.stride[1]) * g.in[2] + nw / g.stride[2];
                                    acc += (static_cast<TA>(xc[i]) - s.zp_x) * static_cast<TA>(wc[(kd * g.k[1] + kh) * g.k[2] + kw]);
                                }
                            }
                        }
                    }
                    total += static_cast<int64_t>(acc) * s.p.block_mult[c * s.p.blocks + (s.p.blockwise() ? j : 0)];
                    y[bc * plane + (od * g.out[1] + oh) * g.out[2] + ow] =
                        static_cast<TY>(s.p.out(c, s.p.sign * total + s.p.bias[c]));
                }
    });
}

// Fast path (weights not block-wise): each input pixel scatters into the outputs its taps reach, so
// no tap tests a stride remainder. Integer sums are exact in any order and every partial sum is
// within the same (N10) bound, so the bytes equal the reference loops'.
template <class TA, class TX, class TY>
void conv_transpose_scatter(const TransposeState& s, const TX* x, TY* y, const ExecContext& ctx) {
    const ConvGeometry& g = s.g;
    const int64_t cg = g.in_per_group(), mg = g.out_per_group(), taps = g.taps(), plane = g.out_plane();
    parallel_for(ctx, g.batch * g.out_ch, [&](int64_t bc) {
        const int64_t b = bc / g.out_ch, c = bc % g.out_ch, grp = c / mg, m = c % mg;
        std::vector<TA> acc(static_cast<size_t>(plane), 0);
        for (int64_t ci = grp * cg; ci < (grp + 1) * cg; ++ci) {
            const TX* xc = x + (b * g.in_ch + ci) * g.in_plane();
            const int16_t* wc = s.w.data() + (ci * mg + m) * taps;
            for (int64_t id = 0; id < g.in[0]; ++id)
                for (int64_t kd = 0; kd < g.k[0]; ++kd) {
                    const int64_t od = id * g.stride[0] - g.pad_lo[0] + kd * g.dil[0];
                    if (od < 0 || od >= g.out[0]) continue;
                    for (int64_t ih = 0; ih < g.in[1]; ++ih)
                        for (int64_t kh = 0; kh < g.k[1]; ++kh) {
                            const int64_t oh = ih * g.stride[1] - g.pad_lo[1] + kh * g.dil[1];
                            if (oh < 0 || oh >= g.out[1]) continue;
                            const TX* xrow = xc + (id * g.in[1] + ih) * g.in[2];
                            const int16_t* wrow = wc + (kd * g.k[1] + kh) * g.k[2];
                            TA* arow = acc.data() + (od * g.out[1] + oh) * g.out[2];
                            for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                                const TA wv = wrow[kw];
                                // the input columns whose output column lands inside the row
                                const int64_t shift = kw * g.dil[2] - g.pad_lo[2], st = g.stride[2];
                                const int64_t lo = shift >= 0 ? 0 : (-shift + st - 1) / st;
                                const int64_t hi = std::min(g.in[2], (g.out[2] - shift + st - 1) / st);
                                if (wv == 0 || lo >= hi) continue;
                                TA* dst = arow + lo * st + shift;
                                for (int64_t iw = lo; iw < hi; ++iw, dst += st)
                                    *dst += (static_cast<TA>(xrow[iw]) - s.zp_x) * wv;
                            }
                        }
                }
        }
        const int64_t mult = s.p.block_mult[c * s.p.blocks];
        for (int64_t o = 0; o < plane; ++o)
            y[bc * plane + o] = static_cast<TY>(s.p.out_fast(c, s.p.sign * (static_cast<int64_t>(acc[o]) * mult) + s.p.bias[c]));
    });
}

// ---- block: columns on the VNNI/dotprod kernel, then col2im ----------------------------------------
// Every column sum and every partial output sum is a sum of at most cg · taps products within the
// (N10) bound checked at prepare, so int32 holds them exactly and the bytes equal the reference's.

constexpr int64_t kPixelChunk = 16 * kVnniRows;  // input pixels per task

void prepare_block(Node& n, TransposeState& s) {
    const ConvGeometry& g = s.g;
    const int64_t cg = g.in_per_group(), mg = g.out_per_group(), taps = g.taps();
    s.cg4 = (cg + 3) / 4 * 4;
    s.vw.resize(static_cast<size_t>(g.group));
    s.rq.resize(static_cast<size_t>(g.group));
    s.mblocks = (mg + kVnniBlock - 1) / kVnniBlock;
    for (int64_t grp = 0; grp < g.group; ++grp) {
        VnniWeights& vw = s.vw[static_cast<size_t>(grp)];
        const int16_t* wg = s.w.data() + grp * cg * mg * taps;  // [ci][m][t]
        pack_vnni(n, static_cast<uint32_t>(2 * grp), mg * taps, 1, cg,
                  [&](int64_t col, int64_t, int64_t k) { return wg[(k * mg + col % mg) * taps + col / mg]; }, vw);
        s.cpad = vw.cblocks * kVnniBlock;
        s.cstride = (mg * taps + 15) / 16 * 16;
        for (int64_t col = 0; col < s.cpad; ++col) s.zpw.push_back(s.zp_x * vw.colsum[static_cast<size_t>(col)]);
        prepare_requant(s.p, grp * mg, std::vector<int64_t>(s.p.bias.begin() + grp * mg, s.p.bias.begin() + (grp + 1) * mg),
                        false, s.rq[static_cast<size_t>(grp)]);
    }
    s.pixels_at = take_scratch(n, static_cast<size_t>(g.in_plane() * g.group * s.cg4));
    s.cols_at = take_scratch(n, static_cast<size_t>(g.group * g.in_plane() * s.cstride) * sizeof(int32_t));
    s.disjoint = true;
    for (int d = 0; d < 3; ++d) s.disjoint = s.disjoint && g.stride[d] >= g.dil[d] * (g.k[d] - 1) + 1;
    if (s.disjoint) {
        for (int d = 0; d < 3; ++d) {
            s.from[d].assign(static_cast<size_t>(g.out[d]), -1);
            for (int64_t i = 0; i < g.in[d]; ++i)
                for (int64_t k = 0; k < g.k[d]; ++k) {
                    const int64_t o = i * g.stride[d] - g.pad_lo[d] + k * g.dil[d];
                    if (o >= 0 && o < g.out[d]) s.from[d][static_cast<size_t>(o)] = i * g.k[d] + k;
                }
        }
        for (int64_t f : s.from[2]) s.wcol.push_back(f < 0 ? -1 : f / g.k[2] * s.cstride + f % g.k[2] * mg);
        return;
    }
    s.lanes = std::min<int64_t>(kVnniBlock, (mg + 15) / 16 * 16);
    s.planes_at = take_scratch(n, static_cast<size_t>(g.group * s.mblocks * g.out_plane() * s.lanes) * sizeof(int32_t));
}

// Disjoint taps: output (od, oh, ow) of channel m0 + i is the column entry t · mg + m0 + i of the
// one input pixel that reaches it (0 where none does), plus the bias. Fewer than 16 channels per
// group requantize one output at a time (a vector would hold mostly padding), more 6 positions × 64
// channels at a time as vnni does: both are (N2)-(N3) exactly.
template <class TY>
void requant_disjoint(const TransposeState& s, const int32_t* cols, TY* y, const ExecContext& ctx) {
    const ConvGeometry& g = s.g;
    const int64_t mg = g.out_per_group(), in_plane = g.in_plane(), plane = g.out_plane();
    const int64_t rows = g.out[0] * g.out[1];
    // The offset of output row `row`'s pixel row in the columns (its taps along D, H), or -1.
    auto row_at = [&](int64_t row) -> int64_t {
        const int64_t fd = s.from[0][static_cast<size_t>(row / g.out[1])];
        const int64_t fh = s.from[1][static_cast<size_t>(row % g.out[1])];
        if (fd < 0 || fh < 0) return -1;
        const int64_t pixel_row = (fd / g.k[0]) * g.in[1] + fh / g.k[1], taps_dh = (fd % g.k[0]) * g.k[1] + fh % g.k[1];
        return pixel_row * g.in[2] * s.cstride + taps_dh * g.k[2] * mg;
    };
    const int64_t* wcol = s.wcol.data();
    if (mg < 16) {
        parallel_for(ctx, g.out_ch * rows, [&](int64_t task) {
            const int64_t c = task / rows, row = task % rows, grp = c / mg, m = c % mg;
            const int32_t* colg = cols + grp * in_plane * s.cstride + m;
            const int64_t bias = s.p.bias[c];
            TY* yr = y + c * plane + row * g.out[2];
            const int64_t at = row_at(row);
            for (int64_t ow = 0; ow < g.out[2]; ++ow) {
                const int64_t v = at < 0 || wcol[ow] < 0 ? 0 : colg[at + wcol[ow]];
                yr[ow] = static_cast<TY>(s.p.out_fast(c, v + bias));
            }
        });
        return;
    }
    parallel_for(ctx, g.group * s.mblocks * rows, [&](int64_t task) {
        const int64_t grp = task / (s.mblocks * rows), m0 = (task / rows % s.mblocks) * kVnniBlock, row = task % rows;
        const int64_t mn = std::min<int64_t>(kVnniBlock, mg - m0);
        const int vectors = static_cast<int>((mn + 15) / 16);
        const int32_t* colg = cols + grp * in_plane * s.cstride + m0;
        alignas(64) int32_t acc[kVnniRows * kVnniBlock], q[kVnniRows * kVnniBlock];
        TY* yg = y + (grp * mg + m0) * plane + row * g.out[2];
        const int64_t row_off = row_at(row);
        for (int64_t o0 = 0; o0 < g.out[2]; o0 += kVnniRows) {
            const int rn = static_cast<int>(std::min<int64_t>(kVnniRows, g.out[2] - o0));
            for (int r = 0; r < rn; ++r) {
                const int64_t at = row_off < 0 || wcol[o0 + r] < 0 ? -1 : row_off + wcol[o0 + r];
                int32_t* dst = acc + r * kVnniBlock;
                std::fill(dst, dst + 16 * vectors, 0);  // no tap here; or the lanes past the channels
                if (at >= 0) std::copy(colg + at, colg + at + mn, dst);
            }
            vnni_requant(s.rq[static_cast<size_t>(grp)], m0, vectors, acc, rn, q);  // (N2)-(N3)
            for (int64_t i = 0; i < mn; ++i)
                for (int r = 0; r < rn; ++r) yg[i * plane + o0 + r] = static_cast<TY>(q[r * kVnniBlock + i]);
        }
    });
}

// The output index along dim d that input index i reaches with tap k, or -1 outside the output.
inline int64_t reach(const ConvGeometry& g, int d, int64_t i, int64_t k) {
    const int64_t o = i * g.stride[d] - g.pad_lo[d] + k * g.dil[d];
    return o >= 0 && o < g.out[d] ? o : -1;
}

template <class TY>
void run_block(const Node& n, const TransposeState& s, const uint8_t* x, TY* y, const ExecContext& ctx) {
    const ConvGeometry& g = s.g;
    uint8_t* pixels = scratch_at<uint8_t>(n, s.pixels_at);
    int32_t* cols = scratch_at<int32_t>(n, s.cols_at);
    int32_t* planes = scratch_at<int32_t>(n, s.planes_at);
    const int64_t cg = g.in_per_group(), mg = g.out_per_group(), taps = g.taps(), in_plane = g.in_plane(), plane = g.out_plane();
    const int64_t chunks = (in_plane + kPixelChunk - 1) / kPixelChunk, pixel = g.group * s.cg4;
    const int64_t zero_tap = 0;
    if (s.cg4 > cg) std::memset(pixels, 0, static_cast<size_t>(in_plane * pixel));  // the pad bytes
    for (int64_t b = 0; b < g.batch; ++b) {
        const uint8_t* xb = x + b * g.in_ch * in_plane;
        parallel_for(ctx, g.in_ch, [&](int64_t ci) {
            uint8_t* dst = pixels + (ci / cg) * s.cg4 + ci % cg;
            const uint8_t* src = xb + ci * in_plane;
            for (int64_t p = 0; p < in_plane; ++p) dst[p * pixel] = src[p];
        });
        parallel_for(ctx, g.group * chunks, [&](int64_t task) {
            const int64_t grp = task / chunks, p0 = (task % chunks) * kPixelChunk;
            const int64_t count = std::min(kPixelChunk, in_plane - p0);
            const VnniWeights& vw = s.vw[static_cast<size_t>(grp)];
            const int32_t* zpw = s.zpw.data() + grp * s.cpad;
            alignas(64) int32_t acc[kVnniRows * kVnniBlock];
            for (int64_t r0 = 0; r0 < count; r0 += kVnniRows) {
                const int64_t rn = std::min<int64_t>(kVnniRows, count - r0);
                const uint8_t* rows[kVnniRows];
                for (int r = 0; r < kVnniRows; ++r)
                    rows[r] = pixels + (p0 + r0 + std::min<int64_t>(r, rn - 1)) * pixel + grp * s.cg4;
                for (int64_t cb = 0; cb < vw.cblocks; ++cb) {
                    vnni_block(vw, cb, rows, &zero_tap, acc);
                    const int64_t width = 16 * vw.vectors(cb);
                    for (int64_t r = 0; r < rn; ++r) {
                        int32_t* col = cols + (grp * in_plane + p0 + r0 + r) * s.cstride + cb * kVnniBlock;
                        for (int64_t i = 0; i < width; ++i) col[i] = acc[r * kVnniBlock + i] - zpw[cb * kVnniBlock + i];
                    }
                }
            }
        });
        if (s.disjoint) {
            requant_disjoint(s, cols, y + b * g.out_ch * plane, ctx);
            continue;
        }
        parallel_for(ctx, g.group * s.mblocks, [&](int64_t task) {
            const int64_t grp = task / s.mblocks, m0 = (task % s.mblocks) * kVnniBlock;
            const int64_t mn = std::min<int64_t>(kVnniBlock, mg - m0);
            int32_t* acc = planes + task * plane * s.lanes;
            std::fill(acc, acc + plane * s.lanes, 0);
            for (int64_t id = 0; id < g.in[0]; ++id)
                for (int64_t ih = 0; ih < g.in[1]; ++ih)
                    for (int64_t iw = 0; iw < g.in[2]; ++iw) {
                        const int64_t p = (id * g.in[1] + ih) * g.in[2] + iw;
                        const int32_t* col = cols + (grp * in_plane + p) * s.cstride + m0;
                        for (int64_t kd = 0, t = 0; kd < g.k[0]; ++kd)
                            for (int64_t kh = 0; kh < g.k[1]; ++kh)
                                for (int64_t kw = 0; kw < g.k[2]; ++kw, ++t) {
                                    const int64_t od = reach(g, 0, id, kd), oh = reach(g, 1, ih, kh), ow = reach(g, 2, iw, kw);
                                    if (od < 0 || oh < 0 || ow < 0) continue;
                                    int32_t* dst = acc + ((od * g.out[1] + oh) * g.out[2] + ow) * s.lanes;
                                    const int32_t* src = col + t * mg;
                                    for (int64_t i = 0; i < mn; ++i) dst[i] += src[i];
                                }
                    }
            const VnniRequant& rq = s.rq[static_cast<size_t>(grp)];
            const int vectors = static_cast<int>((mn + 15) / 16);
            alignas(64) int32_t q[kVnniRows * kVnniBlock], rows[kVnniRows * kVnniBlock];
            TY* yg = y + (b * g.out_ch + grp * mg + m0) * plane;
            for (int64_t o0 = 0; o0 < plane; o0 += kVnniRows) {
                const int rn = static_cast<int>(std::min<int64_t>(kVnniRows, plane - o0));
                const int32_t* in = acc + o0 * s.lanes;
                if (s.lanes != kVnniBlock) {  // vnni_requant takes rows of 64
                    for (int r = 0; r < rn; ++r)
                        std::copy(in + r * s.lanes, in + r * s.lanes + 16 * vectors, rows + r * kVnniBlock);
                    in = rows;
                }
                vnni_requant(rq, m0, vectors, in, rn, q);  // (N2)-(N3)
                for (int64_t i = 0; i < mn; ++i)
                    for (int r = 0; r < rn; ++r) yg[i * plane + o0 + r] = static_cast<TY>(q[r * kVnniBlock + i]);
            }
        });
    }
}

bool prepare_conv_transpose(Node& n, std::string& err) {
    if (!check_operands(n, err)) return false;
    TransposeState& s = n.make_state<TransposeState>();
    ConvGeometry& g = s.g;
    if (!read_conv_geometry(n, g, err)) return false;
    const Tensor* w = n.in[1];
    if (w->dim(0) != g.in_ch || w->dim(1) != g.out_per_group()) {
        err = "channels do not fit the weight shape and group";
        return false;
    }
    int32_t wmax = 0;
    if (!unpack_weight(w, s.w, wmax, err)) return false;
    if (w->encoding.block_axis >= 0 && w->encoding.block_axis != 0) {
        err = "a block-wise ConvTranspose weight must be blocked along its input channels (axis 0)";
        return false;
    }
    if (!read_channel_params(n, g.out_ch, w, n.input(2), s.p, err)) return false;
    s.zp_x = zero_point(*n.in[0]);
    if (!check_total_bound(s.p, operand_max(*n.in[0]), wmax, g.in_per_group() * g.taps(), err)) return false;
    const int64_t block = s.p.blockwise() ? std::min(s.p.block_size, g.in_per_group()) : g.in_per_group();
    s.acc32 = fits_int32(operand_max(*n.in[0]), wmax, block * g.taps());
    s.scatter = !s.p.blockwise() && !force_reference();
    s.block = QNNB_NPU_BLOCK && s.scatter && n.in[0]->dtype == QNNB_UINT8 && wmax <= 128 && s.p.sign == 1 &&
              fits_int32(255, 128, g.in_per_group() * g.taps());
    if (s.block) prepare_block(n, s);
    return true;
}

void run_conv_transpose(Node& n, const ExecContext& ctx) {
    TransposeState& s = n.state_as<TransposeState>();
    with_act_types(n, [&](auto tx, auto ty) {
        using TX = decltype(tx);
        using TY = decltype(ty);
        const TX* x = n.in[0]->in<TX>();
        TY* y = n.out[0]->out<TY>();
        if constexpr (sizeof(TX) == 1) {
            if (s.block) return run_block(n, s, x, y, ctx);
        }
        if (s.scatter && s.acc32) conv_transpose_scatter<int32_t>(s, x, y, ctx);
        else if (s.scatter) conv_transpose_scatter<int64_t>(s, x, y, ctx);
        else if (s.acc32) conv_transpose_ref<int32_t>(s, x, y, ctx);
        else conv_transpose_ref<int64_t>(s, x, y, ctx);
    });
}

const Kernel kKernels[] = {
    {"ConvTranspose", prepare_conv_transpose, run_conv_transpose},
};

}  // namespace

extern const KernelTable kNpuConvTransposeKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace npu
}  // namespace qnnb
