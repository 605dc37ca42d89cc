// Ops that move elements, on integer codes: docs/npu.md (N20) re-encoding an operand to the
// output's encoding, (N21) Concat, (N22) Pad, (N23) Resize linear.
//
// A mover whose output shares its input's encoding is a byte copy: the registry sends it to the
// cpu kernel directly. Otherwise the kernel here re-encodes (N20) what differs — each data input
// before the move (a constant once, at prepare), or Split's outputs after it — and runs the cpu
// byte mover on a shadow node that sees the re-encoded tensors.
#include <algorithm>
#include <cstring>
#include <memory>

#include "../core/parallel.h"
#include "code_table.h"
#include "refusal.h"

namespace qnnb {
namespace npu {
namespace {

bool is_code_type(qnnb_dtype t) {
    return t == QNNB_UINT8 || t == QNNB_UINT16 || t == QNNB_INT8 || t == QNNB_INT16 || t == QNNB_INT32 ||
           t == QNNB_INT4;
}

// Element i of an integer tensor (int4: two per byte, the lower index in the low nibble).
int64_t int_at(const Tensor& t, int64_t i) {
    switch (t.dtype) {
        case QNNB_UINT8: return t.in<uint8_t>()[i];
        case QNNB_UINT16: return t.in<uint16_t>()[i];
        case QNNB_INT8: return t.in<int8_t>()[i];
        case QNNB_INT16: return t.in<int16_t>()[i];
        case QNNB_INT32: return t.in<int32_t>()[i];
        case QNNB_INT4: {
            const uint8_t b = t.in<uint8_t>()[i >> 1];
            const int v = (i & 1) ? b >> 4 : b & 15;
            return v >= 8 ? v - 16 : v;
        }
        default: return 0;
    }
}

// Which of a constant's scales element i uses: its channel (encoding.axis) and, block-wise, its
// block along block_axis; scales are laid out [channel][block].
struct ScaleIndex {
    int64_t channel_div = 0, channel_n = 1, block_div = 0, block_n = 1, block_size = 1;
    explicit ScaleIndex(const Tensor& t) {
        const Encoding& e = t.encoding;
        auto stride_of = [&](int axis) {
            int64_t s = 1;
            for (int d = axis + 1; d < t.rank(); ++d) s *= t.dim(d);
            return s;
        };
        if (e.axis >= 0 && e.axis < t.rank()) {
            channel_div = stride_of(e.axis);
            channel_n = t.dim(e.axis);
        }
        if (e.block_axis >= 0 && e.block_axis < t.rank() && e.block_size > 0) {
            block_div = stride_of(e.block_axis);
            block_size = e.block_size;
            block_n = t.dim(e.block_axis) / e.block_size;
        }
    }
    int64_t count() const { return channel_n * block_n; }
    size_t operator()(int64_t i) const {
        const int64_t c = channel_div ? (i / channel_div) % channel_n : 0;
        const int64_t b = block_div ? ((i / block_div) % (block_n * block_size)) / block_size : 0;
        return static_cast<size_t>(c * block_n + b);
    }
};

// (N20): r(q) = clamp(requantize(q - zp_x, M_j) + zp_y, 0, qmax_y), from `src` into `dst`.
// An activation source uses a table of 2^b entries; a constant is re-encoded once, at prepare.
struct Recode {
    Tensor own;                  // the scratch side: dst (operand re-encoded) or src (Split's output)
    std::vector<uint8_t> bytes;  // its storage
    const Tensor* src = nullptr;
    Tensor* dst = nullptr;
    ArrayView<int32_t> table;
};

void alloc_own(Recode& r, qnnb_dtype dtype, const std::vector<int64_t>& shape, const Encoding& encoding,
               const std::string& name) {
    r.own.name = name;
    r.own.dtype = dtype;
    r.own.shape = shape;
    r.own.encoding = encoding;
    r.bytes.assign(std::max<size_t>(r.own.nbytes(), 1), 0);
    r.own.data = r.bytes.data();
}

bool check_source(const Tensor* x, std::string& err) {
    if (!x || !is_code_type(x->dtype) || !x->encoding.present() || x->encoding.kind != QNNB_ENCODING_INT ||
        x->encoding.scales.empty() || x->encoding.offsets.size() != x->encoding.scales.size()) {
        err = "tensor '" + (x ? x->name : std::string("?")) + "' is not an integer tensor with an encoding";
        return false;
    }
    if (!x->is_const() && x->encoding.scales.size() != 1) {
        err = "activation '" + x->name + "' must have a per-tensor encoding";
        return false;
    }
    return true;
}

// Builds the re-encoding of r.src into r.dst's encoding with multipliers mult/shift[0 .. count),
// one per scale of the source; an activation's is the node's prepared array `slot`.
bool prepare_recode(Node& n, uint32_t slot, Recode& r, const int32_t* mult, const int32_t* shift, size_t count,
                    std::string& err) {
    const Tensor& x = *r.src;
    const Tensor& y = *r.dst;
    if (!x.is_const()) {
        r.table = recode_table(n, slot, x, y, mult[0], shift[0]);
        return true;
    }
    const int32_t zp_y = zero_point(y), qmax = qmax_of(y);
    const ScaleIndex index(x);
    if (static_cast<size_t>(index.count()) != count || x.encoding.scales.size() != count) {
        err = "constant '" + x.name + "': its scales do not match its per-channel / block layout";
        return false;
    }
    const int64_t numel = x.numel();
    with_int_type(y.dtype, [&](auto ty) {
        using TY = decltype(ty);
        TY* out = static_cast<TY*>(r.own.data);
        for (int64_t i = 0; i < numel; ++i) {
            const size_t j = index(i);
            out[i] = static_cast<TY>(requantize_out(int_at(x, i) + x.encoding.offsets[j], mult[j], shift[j], zp_y, qmax));
        }
    });
    r.own.const_data = r.own.data;  // the re-encoded constant is a constant too
    r.own.data = nullptr;
    return true;
}


// An activation's re-encoding that maps every code to itself (M = 1 and one zero point, encodings
// that differ only in how their float scale was spelled): the move reads the codes as they are.
bool is_identity(const Recode& r) {
    if (r.table.empty() || r.src->dtype != r.dst->dtype) return false;
    for (size_t q = 0; q < r.table.size(); ++q)
        if (r.table[q] != static_cast<int32_t>(q)) return false;
    return true;
}

void run_recode(const Recode& r, const ExecContext& ctx) {
    if (r.table.empty()) return;  // a constant, done at prepare
    apply_code_table(*r.src, *r.dst, r.table.data(), ctx);
}

struct LinearResize;

struct MoverState {
    const Kernel* cpu = nullptr;
    Node shadow;                                  // the node as the cpu byte mover sees it
    std::vector<std::unique_ptr<Recode>> before;  // operands re-encoded before the move
    std::vector<std::unique_ptr<Recode>> after;   // Split's outputs re-encoded after it
    Tensor pad_value;                             // (N22): the pad code, in the output's dtype
    uint8_t pad_bytes[2] = {0, 0};
    std::shared_ptr<LinearResize> linear;         // Resize linear (N23)
};

bool read_mults(const Node& n, std::vector<int64_t>& mult, std::vector<int64_t>& shift, std::string& err) {
    mult = n.params.ints("npu_mult");
    shift = n.params.ints("npu_shift");
    if (mult.empty() || mult.size() != shift.size()) {
        err = "parameters npu_mult/npu_shift missing (convert the model for the npu again)";
        return false;
    }
    return true;
}

// Re-encodes the data inputs `first .. last` that differ from output 0's encoding.
bool recode_inputs(Node& n, MoverState& s, size_t first, size_t last, std::string& err) {
    std::vector<int64_t> m64, s64;
    if (!read_mults(n, m64, s64, err)) return false;
    std::vector<int32_t> mult(m64.begin(), m64.end()), shift(s64.begin(), s64.end());
    size_t k = 0;
    for (size_t i = first; i < last; ++i) {
        Tensor* x = n.in[i];
        if (!check_source(x, err)) return false;
        const size_t count = x->encoding.scales.size();
        if (k + count > mult.size()) {
            err = "too few multipliers in npu_mult (convert the model for the npu again)";
            return false;
        }
        if (!same_encoding(*x, *n.out[0])) {
            auto r = std::make_unique<Recode>();
            alloc_own(*r, n.out[0]->dtype, x->shape, n.out[0]->encoding, x->name + "/npu_recoded");
            r->src = x;
            r->dst = &r->own;
            if (!prepare_recode(n, static_cast<uint32_t>(i), *r, &mult[k], &shift[k], count, err)) return false;
            if (is_identity(*r)) {
                k += count;
                continue;
            }
            s.shadow.in[i] = r->dst;
            s.before.push_back(std::move(r));
        }
        k += count;
    }
    return true;
}

MoverState& start(Node& n) {
    auto& s = n.make_state<MoverState>();
    s.cpu = cpu_find_kernel(n.op);
    s.shadow = n;
    s.shadow.state.reset();
    return s;
}

bool finish(MoverState& s, std::string& err) {
    if (!s.cpu) {
        err = "no byte mover for " + s.shadow.op;
        return false;
    }
    return s.cpu->prepare(s.shadow, err);
}

// Identity, Reshape, Transpose, Slice, Gather, Expand, Tile (data input 0) and Concat (every input).
bool prepare_mover(Node& n, std::string& err) {
    if (!check_int_output(n.output(0), err)) return false;
    MoverState& s = start(n);
    const size_t data = n.op == "Concat" ? n.in.size() : 1;
    if (!recode_inputs(n, s, 0, data, err)) return false;
    return finish(s, err);
}

void run_mover(Node& n, const ExecContext& ctx) {
    MoverState& s = n.state_as<MoverState>();
    for (const auto& r : s.before) run_recode(*r, ctx);
    s.cpu->run(s.shadow, ctx);
    for (const auto& r : s.after) run_recode(*r, ctx);
}

// Split: each output that differs is written by the cpu kernel into a scratch tensor holding the
// input's codes, then re-encoded with multiplier k (output k).
bool prepare_split(Node& n, std::string& err) {
    Tensor* x = n.input(0);
    if (!check_source(x, err) || x->is_const()) {
        if (err.empty()) err = "Split of a constant";
        return false;
    }
    std::vector<int64_t> mult, shift;
    if (!read_mults(n, mult, shift, err)) return false;
    if (mult.size() < n.out.size()) {
        err = "too few multipliers in npu_mult (convert the model for the npu again)";
        return false;
    }
    MoverState& s = start(n);
    for (size_t k = 0; k < n.out.size(); ++k) {
        Tensor* y = n.out[k];
        if (!y) continue;
        if (!check_int_output(y, err)) return false;
        if (same_encoding(*x, *y)) continue;
        auto r = std::make_unique<Recode>();
        alloc_own(*r, x->dtype, y->shape, x->encoding, y->name + "/npu_split");
        r->src = &r->own;
        r->dst = y;
        const int32_t m = static_cast<int32_t>(mult[k]), sh = static_cast<int32_t>(shift[k]);
        if (!prepare_recode(n, static_cast<uint32_t>(n.in.size() + k), *r, &m, &sh, 1, err)) return false;
        if (is_identity(*r)) continue;
        s.shadow.out[k] = &r->own;
        s.after.push_back(std::move(r));
    }
    return finish(s, err);
}

// (N22) Pad: constant mode pads with npu_pad_value, the pad constant as an output code.
bool prepare_pad(Node& n, std::string& err) {
    if (!check_int_output(n.output(0), err)) return false;
    MoverState& s = start(n);
    if (!recode_inputs(n, s, 0, 1, err)) return false;
    if (n.params.s("mode", "constant") == "constant") {
        if (!n.params.has("npu_pad_value") || s.shadow.in.size() < 2) {
            err = "parameter npu_pad_value missing (convert the model for the npu again)";
            return false;
        }
        const int32_t code = saturate(n.params.i("npu_pad_value", 0), qmax_of(*n.out[0]));
        Tensor& v = s.pad_value;
        v.name = n.name + "/npu_pad_value";
        v.dtype = n.out[0]->dtype;
        v.shape = {};
        v.encoding = n.out[0]->encoding;
        if (v.dtype == QNNB_UINT8) {
            s.pad_bytes[0] = static_cast<uint8_t>(code);
        } else {
            const uint16_t c16 = static_cast<uint16_t>(code);
            std::memcpy(s.pad_bytes, &c16, sizeof c16);
        }
        v.const_data = s.pad_bytes;
        s.shadow.in[1] = &v;
    }
    return finish(s, err);
}

// ---- Resize ------------------------------------------------------------------------------------

// (N23): per resized axis and output coordinate, two input indices and the Q(F) weight w1 of the
// second (the first weighs 2^F - w1); a tap's weight over several resized axes is their product,
// rounded to Q(F) after each axis in axis order; the sum of weight x (q - zp_x) is requantized.
struct LinearResize {
    int rank = 0;
    std::vector<int64_t> in_shape, out_shape, in_strides;
    std::vector<int> axis_of;  // per dim: index into the tables below, or -1 (identity)
    std::vector<std::vector<int64_t>> i0, i1, w1;
    std::vector<std::vector<uint8_t>> outside;
    int32_t frac = 20, mult = 0, shift = 0, zp_x = 0, zp_y = 0, qmax = 0, extrapolation = 0;
};

bool prepare_linear(Node& n, LinearResize& L, std::string& err) {
    const Tensor* x = n.in[0];
    const Tensor* y = n.out[0];
    if (!check_int_operand(x, err) || x->is_const()) {
        if (err.empty()) err = "Resize of a constant";
        return false;
    }
    L.rank = x->rank();
    if (y->rank() != L.rank || L.rank == 0) {
        err = "input and output ranks differ";
        return false;
    }
    L.in_shape = x->shape;
    L.out_shape = y->shape;
    L.in_strides.assign(static_cast<size_t>(L.rank), 1);
    for (int d = L.rank - 2; d >= 0; --d) L.in_strides[d] = L.in_strides[d + 1] * L.in_shape[d + 1];
    const std::vector<int64_t> axes = n.params.ints("npu_axes"), i0 = n.params.ints("npu_index0"),
                               i1 = n.params.ints("npu_index1"), w1 = n.params.ints("npu_weight1"),
                               outside = n.params.ints("npu_outside");
    L.frac = static_cast<int32_t>(n.params.i("npu_frac_bits", 20));
    int32_t m[1], sh[1];
    if (!int_params(n, "npu_mult", 1, m, err) || !int_params(n, "npu_shift", 1, sh, err)) return false;
    L.mult = m[0];
    L.shift = sh[0];
    L.zp_x = zero_point(*x);
    L.zp_y = zero_point(*y);
    L.qmax = qmax_of(*y);
    L.extrapolation = saturate(n.params.i("npu_extrapolation", 0), L.qmax);
    L.axis_of.assign(static_cast<size_t>(L.rank), -1);
    size_t pos = 0;
    for (size_t k = 0; k < axes.size(); ++k) {
        const int64_t d = axes[k], len = d >= 0 && d < L.rank ? L.out_shape[d] : -1;
        if (len < 0 || pos + len > i0.size() || i0.size() != i1.size() || i0.size() != w1.size() ||
            i0.size() != outside.size()) {
            err = "resize taps missing or of the wrong length (convert the model for the npu again)";
            return false;
        }
        L.axis_of[d] = static_cast<int>(k);
        L.i0.emplace_back(i0.begin() + pos, i0.begin() + pos + len);
        L.i1.emplace_back(i1.begin() + pos, i1.begin() + pos + len);
        L.w1.emplace_back(w1.begin() + pos, w1.begin() + pos + len);
        L.outside.emplace_back(outside.begin() + pos, outside.begin() + pos + len);
        for (int64_t o = 0; o < len; ++o)
            if (L.i0[k][o] < 0 || L.i0[k][o] >= L.in_shape[d] || L.i1[k][o] < 0 || L.i1[k][o] >= L.in_shape[d] ||
                L.w1[k][o] < 0 || L.w1[k][o] > (int64_t{1} << L.frac)) {
                err = "resize taps out of range";
                return false;
            }
        pos += static_cast<size_t>(len);
    }
    for (int d = 0; d < L.rank; ++d)
        if (L.axis_of[d] < 0 && L.in_shape[d] != L.out_shape[d]) {
            err = "an axis changes size without taps";
            return false;
        }
    return true;
}

struct Tap {
    int64_t offset;
    int64_t weight;  // Q(F)
};

template <class TX, class TY>
void run_linear_typed(const LinearResize& L, const TX* x, TY* y, const ExecContext& ctx) {
    const int r = L.rank;
    const int64_t width = L.out_shape[r - 1];
    int64_t rows = 1;
    for (int d = 0; d < r - 1; ++d) rows *= L.out_shape[d];
    const int frac = L.frac;
    const int64_t one = int64_t{1} << frac, half = one >> 1;
    const int64_t zp_x = L.zp_x;
    const int32_t mult = L.mult, shift = L.shift, zp_y = L.zp_y, qmax = L.qmax;
    const TY extrapolation = static_cast<TY>(L.extrapolation);
    const int last = L.axis_of[r - 1];
    const int64_t* a0 = last >= 0 ? L.i0[last].data() : nullptr;
    const int64_t* a1 = last >= 0 ? L.i1[last].data() : nullptr;
    const int64_t* w1 = last >= 0 ? L.w1[last].data() : nullptr;
    const uint8_t* out_last = last >= 0 ? L.outside[last].data() : nullptr;
    const int64_t per_item = std::max<int64_t>(1, 4096 / std::max<int64_t>(width, 1));
    parallel_for(ctx, (rows + per_item - 1) / per_item, [&](int64_t item) {
        std::vector<Tap> taps, next;
        std::vector<int64_t> acc(static_cast<size_t>(width));
        const int64_t row_end = std::min(rows, (item + 1) * per_item);
        for (int64_t row = item * per_item; row < row_end; ++row) {
            // The row's taps over the outer dims: offsets and Q(F) weights, rounded after each axis.
            taps.assign(1, Tap{0, one});
            bool outside = false;
            int64_t rem = row, idx[QNNB_MAX_RANK] = {0};
            for (int d = r - 2; d >= 0; --d) {
                idx[d] = rem % L.out_shape[d];
                rem /= L.out_shape[d];
            }
            for (int d = 0; d < r - 1; ++d) {
                const int a = L.axis_of[d];
                const int64_t o = idx[d], stride = L.in_strides[d];
                if (a < 0) {
                    for (Tap& t : taps) t.offset += o * stride;
                    continue;
                }
                outside |= L.outside[a][o] != 0;
                const int64_t w = L.w1[a][o], i0 = L.i0[a][o] * stride, i1 = L.i1[a][o] * stride;
                next.clear();
                for (const Tap& t : taps) {
                    next.push_back({t.offset + i0, (t.weight * (one - w) + half) >> frac});  // |w w| <= 2^40
                    next.push_back({t.offset + i1, (t.weight * w + half) >> frac});
                }
                taps.swap(next);
            }
            TY* __restrict out = y + row * width;
            if (outside) {
                std::fill(out, out + width, extrapolation);
                continue;
            }
            // acc = sum of weight x (q - zp_x): 2^k taps x 2^20 x 2^16 fits int64
            std::fill(acc.begin(), acc.end(), 0);
            int64_t* __restrict a = acc.data();
            for (const Tap& t : taps) {
                const TX* __restrict src = x + t.offset;
                const int64_t wt = t.weight;
                if (last < 0) {
                    for (int64_t o = 0; o < width; ++o) a[o] += wt * (static_cast<int64_t>(src[o]) - zp_x);
                } else {
                    for (int64_t o = 0; o < width; ++o) {
                        const int64_t wb = (wt * w1[o] + half) >> frac, wa = (wt * (one - w1[o]) + half) >> frac;
                        a[o] += wa * (static_cast<int64_t>(src[a0[o]]) - zp_x) + wb * (static_cast<int64_t>(src[a1[o]]) - zp_x);
                    }
                }
            }
            for (int64_t o = 0; o < width; ++o)
                out[o] = (out_last && out_last[o]) ? extrapolation
                                                   : static_cast<TY>(requantize_out_fast(a[o], mult, shift, zp_y, qmax));
        }
    });
}

bool prepare_resize(Node& n, std::string& err) {
    if (!check_int_output(n.output(0), err)) return false;
    if (refused(n, err)) return false;
    const std::string mode = n.params.s("mode", "nearest");
    if (mode == "nearest") {
        MoverState& s = start(n);
        if (!recode_inputs(n, s, 0, 1, err)) return false;
        Param p;
        p.kind = QNNB_PARAM_FLOATS;
        p.floats = {static_cast<float>(saturate(n.params.i("npu_extrapolation", 0), qmax_of(*n.out[0])))};
        s.shadow.params.set("extrapolation_value", p);  // the cpu kernel writes it as an integer
        return finish(s, err);
    }
    MoverState& s = n.make_state<MoverState>();
    s.linear = std::make_shared<LinearResize>();
    return prepare_linear(n, *s.linear, err);
}

void run_resize(Node& n, const ExecContext& ctx) {
    MoverState& s = n.state_as<MoverState>();
    if (!s.linear) {
        run_mover(n, ctx);
        return;
    }
    if (n.out[0]->numel() == 0) return;
    with_int_type(n.in[0]->dtype, [&](auto tx) {
        with_int_type(n.out[0]->dtype, [&](auto ty) {
            using TX = decltype(tx);
            using TY = decltype(ty);
            run_linear_typed<TX, TY>(*s.linear, n.in[0]->in<TX>(), n.out[0]->out<TY>(), ctx);
        });
    });
}

const Kernel kKernels[] = {
    {"Identity", prepare_mover, run_mover}, {"Reshape", prepare_mover, run_mover},
    {"Transpose", prepare_mover, run_mover}, {"Slice", prepare_mover, run_mover},
    {"Gather", prepare_mover, run_mover},   {"Expand", prepare_mover, run_mover},
    {"Tile", prepare_mover, run_mover},     {"Concat", prepare_mover, run_mover},
    {"Split", prepare_split, run_mover},    {"Pad", prepare_pad, run_mover},
    {"Resize", prepare_resize, run_resize},
};

}  // namespace

extern const KernelTable kNpuMovementKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace npu
}  // namespace qnnb
