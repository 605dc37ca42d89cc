// Depthwise Conv on 8-bit activations, channels innermost: conv_depthwise.h. Each output is the
// same integer sum as the reference loops' (integer adds in any order, within the (N10) int32
// bound checked at prepare) and goes through the block paths' requantization, so the bytes match.
#include "conv_depthwise.h"

#include <algorithm>

#include "../core/parallel.h"

namespace qnnb {
namespace npu {
namespace {


// One output position's sums Σ_t x·w for 16 · V channels from c0 (x the codes; zp_x · Σ_t w is in
// the requantization's comp): the trip counts known, the sums stay in registers across the taps.
template <int V>
void sum_taps(const DepthwiseConv& dw, const uint8_t* xs, int64_t origin, int64_t c0, int32_t* a) {
    int32_t sum[16 * V] = {};
    const int64_t taps = static_cast<int64_t>(dw.tap_off.size());
    for (int64_t t = 0; t < taps; ++t) {
        const uint8_t* __restrict xt = xs + (origin + dw.tap_off[t]) * dw.pix + c0;
        const int32_t* __restrict wt = dw.w.data() + t * dw.cpad + c0;
        int32_t part[16 * V];  // products, then sums: GCC 12 left the fused loop scalar for V = 2
        for (int i = 0; i < 16 * V; ++i) part[i] = static_cast<int32_t>(xt[i]) * wt[i];
        for (int i = 0; i < 16 * V; ++i) sum[i] += part[i];
    }
    std::copy(sum, sum + 16 * V, a);
}

template <class TY>
void run_typed(const DepthwiseConv& dw, uint8_t* xs, const uint8_t* x, TY* y, const ExecContext& ctx) {
    const ConvGeometry& g = dw.g;
    const int64_t ch = g.out_ch, plane = g.out_plane(), in_plane = g.in_plane();
    const int64_t cblocks = dw.cpad / kVnniBlock, chunks = (plane + kPositionChunk - 1) / kPositionChunk;
    const uint8_t zp = static_cast<uint8_t>(dw.zp_x);
    fill_padding(xs, g, dw.pd, dw.pix, zp);
    for (int64_t b = 0; b < g.batch; ++b) {
        const uint8_t* xb = x + b * ch * in_plane;
        // The input's pixels, channels past ch zp_x as the padding is.
        parallel_for(ctx, g.in[0] * g.in[1], [&](int64_t r) {
            const int64_t id = r / g.in[1], ih = r % g.in[1];
            uint8_t* row = xs + (((id + g.pad_lo[0]) * dw.pd[1] + ih + g.pad_lo[1]) * dw.pd[2] + g.pad_lo[2]) * dw.pix;
            stage_pixels(xb + (id * g.in[1] + ih) * g.in[2], in_plane, ch, g.in[2], row, dw.pix, dw.pix, zp);
        });
        TY* yb = y + b * ch * plane;
        parallel_for(ctx, cblocks * chunks, [&](int64_t task) {
            const int64_t cb = task / chunks, p0 = (task % chunks) * kPositionChunk;
            const int64_t count = std::min(kPositionChunk, plane - p0);
            const int64_t c0 = cb * kVnniBlock, cn = std::min<int64_t>(kVnniBlock, ch - c0);
            const int vectors = static_cast<int>((cn + 15) / 16);
            alignas(64) int32_t acc[kVnniRows * kVnniBlock], q[kVnniRows * kVnniBlock];
            ChunkStage<TY> stage;
            for (int64_t r0 = 0; r0 < count; r0 += kVnniRows) {
                const int rn = static_cast<int>(std::min<int64_t>(kVnniRows, count - r0));
                for (int r = 0; r < rn; ++r) {
                    const int64_t p = p0 + r0 + r, ow = p % g.out[2], oh = (p / g.out[2]) % g.out[1],
                                  od = p / (g.out[2] * g.out[1]);
                    const int64_t origin = (od * g.stride[0] * dw.pd[1] + oh * g.stride[1]) * dw.pd[2] + ow * g.stride[2];
                    int32_t* a = acc + r * kVnniBlock;
                    switch (vectors) {
                        case 1: sum_taps<1>(dw, xs, origin, c0, a); break;
                        case 2: sum_taps<2>(dw, xs, origin, c0, a); break;
                        case 3: sum_taps<3>(dw, xs, origin, c0, a); break;
                        default: sum_taps<4>(dw, xs, origin, c0, a); break;
                    }
                }
                vnni_requant(dw.rq, c0, vectors, acc, rn, q);  // (N2)-(N3)
                stage.put(q, r0, rn, cn);
            }
            stage.copy_out(yb + c0 * plane + p0, plane, count, cn);
        });
    }
}

}  // namespace

bool prepare_depthwise(Node& n, const ConvGeometry& g, const int64_t* pd, const ChannelParams& p,
                       const std::vector<int16_t>& w, int32_t wmax, int32_t zp_x, DepthwiseConv& dw) {
    const int64_t taps = g.taps();
    if (!QNNB_NPU_BLOCK || g.group != g.in_ch || g.out_ch != g.in_ch || p.blockwise() || p.sign != 1 ||
        wmax > 128 || !fits_int32(255, 128, taps))
        return false;
    dw.g = g;
    std::copy(pd, pd + 3, dw.pd);
    dw.zp_x = zp_x;
    dw.cpad = (g.out_ch + kVnniBlock - 1) / kVnniBlock * kVnniBlock;
    dw.pix = (g.out_ch + 15) / 16 * 16;
    dw.x_at = take_scratch(n, static_cast<size_t>(pd[0] * pd[1] * pd[2] * dw.pix));
    dw.w.assign(static_cast<size_t>(taps * dw.cpad), 0);
    std::vector<int64_t> comp(p.bias);  // bias − zp_x · Σ_t w: the codes are summed as they are
    for (int64_t c = 0; c < g.out_ch; ++c)
        for (int64_t t = 0; t < taps; ++t) {
            dw.w[static_cast<size_t>(t * dw.cpad + c)] = w[static_cast<size_t>(c * taps + t)];
            comp[static_cast<size_t>(c)] -= static_cast<int64_t>(zp_x) * w[static_cast<size_t>(c * taps + t)];
        }
    for (int64_t kd = 0; kd < g.k[0]; ++kd)
        for (int64_t kh = 0; kh < g.k[1]; ++kh)
            for (int64_t kw = 0; kw < g.k[2]; ++kw)
                dw.tap_off.push_back((kd * g.dil[0] * pd[1] + kh * g.dil[1]) * pd[2] + kw * g.dil[2]);
    prepare_requant(p, 0, comp, false, dw.rq);
    return true;
}

void run_depthwise(const DepthwiseConv& dw, uint8_t* xs, const uint8_t* x, void* y, bool y8, const ExecContext& ctx) {
    if (y8) run_typed(dw, xs, x, static_cast<uint8_t*>(y), ctx);
    else run_typed(dw, xs, x, static_cast<uint16_t*>(y), ctx);
}

}  // namespace npu
}  // namespace qnnb
