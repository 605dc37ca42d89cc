// Integer ConvTranspose: docs/npu.md (N12), fast paths (N15).
#include <algorithm>
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
    Geometry g;
    ChannelParams p;
    std::vector<int16_t> w;
    int32_t zp_x = 0;
    bool acc32 = true;
    bool scatter = false;  // the fast path below; block-wise weights and QNNB_NPU_REFERENCE take the loops
};

template <class TA, class TX, class TY>
void conv_transpose_ref(const TransposeState& s, const TX* x, TY* y, const ExecContext& ctx) {
    const Geometry& g = s.g;
    const int64_t cg = g.cg(), mg = g.mg(), taps = g.taps(), plane = g.out_plane();
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
    const Geometry& g = s.g;
    const int64_t cg = g.cg(), mg = g.mg(), taps = g.taps(), plane = g.out_plane();
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
            y[bc * plane + o] = static_cast<TY>(s.p.out(c, s.p.sign * (static_cast<int64_t>(acc[o]) * mult) + s.p.bias[c]));
    });
}

bool prepare_conv_transpose(Node& n, std::string& err) {
    if (!check_operands(n, err)) return false;
    TransposeState& s = n.make_state<TransposeState>();
    Geometry& g = s.g;
    if (!read_geometry(n, g, err)) return false;
    const Tensor* w = n.in[1];
    if (w->dim(0) != g.in_ch || w->dim(1) != g.mg()) {
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
    if (!check_total_bound(s.p, operand_max(*n.in[0]), wmax, g.cg() * g.taps(), err)) return false;
    const int64_t block = s.p.blockwise() ? std::min(s.p.block_size, g.cg()) : g.cg();
    s.acc32 = fits_int32(operand_max(*n.in[0]), wmax, block * g.taps());
    s.scatter = !s.p.blockwise() && !force_reference();
    return true;
}

void run_conv_transpose(Node& n, const ExecContext& ctx) {
    const TransposeState& s = n.state_as<TransposeState>();
    with_act_types(n, [&](auto tx, auto ty) {
        using TX = decltype(tx);
        using TY = decltype(ty);
        const TX* x = n.in[0]->in<TX>();
        TY* y = n.out[0]->out<TY>();
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
