// Helpers shared by the movement, pooling, reduction, normalisation and arith kernels
// (docs/npu.md (N20)-(N34)). Integer only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "../core/parallel.h"
#include "../core/prepared.h"
#include "npu.h"

namespace qnnb {
namespace npu {
namespace misc {

// y[i] = table[x[i]] over whole tensors: every kernel whose output is a function of one integer
// code (a LUT, a re-encoding, an activation combined with a scalar constant). `table` has an entry
// for every code x can hold; chunks of 16K codes are shared among the threads.
inline void apply_code_table(const Tensor& src, Tensor& dst, const int32_t* table, const ExecContext& ctx) {
    constexpr int64_t kChunk = 16384;
    const int64_t total = src.numel();
    with_int_type(src.dtype, [&](auto tx) {
        with_int_type(dst.dtype, [&](auto ty) {
            using TX = decltype(tx);
            using TY = decltype(ty);
            const TX* x = src.in<TX>();
            TY* y = dst.out<TY>();
            parallel_for(ctx, (total + kChunk - 1) / kChunk, [&](int64_t c) {
                const int64_t end = std::min(total, (c + 1) * kChunk);
                for (int64_t i = c * kChunk; i < end; ++i) y[i] = static_cast<TY>(table[x[i]]);
            });
        });
    });
}

// The table of a function of one `bits`-bit input code, out_code(q) for every q: a prepared array
// (core/prepared.h), so a context binary carries it and its load does not compute it again.
template <class F> ArrayView<int32_t> code_table(Node& n, uint32_t slot, int bits, F out_code) {
    const size_t size = size_t{1} << bits;
    return n.prepared->get<int32_t>(slot, size, [&](int32_t* table) {
        for (size_t q = 0; q < size; ++q) table[q] = out_code(static_cast<int64_t>(q));
    });
}

// (N20) x's codes re-encoded into y's encoding, requantize(q − zp_x) for every code q: the code
// table that is the node's prepared array `slot`.
inline ArrayView<int32_t> recode_table(Node& n, uint32_t slot, const Tensor& x, const Tensor& y, int32_t mult,
                                       int32_t shift) {
    const int32_t zp_x = zero_point(x), zp_y = zero_point(y), qmax = qmax_of(y);
    return code_table(n, slot, x.encoding.bitwidth,
                      [&](int64_t q) { return requantize_out(q - zp_x, mult, shift, zp_y, qmax); });
}

// Which input of a two-input node is an 8-bit activation whose partner is a one-element constant
// (x + 1, x / 1.41): the node is then a function of x's code, tabulated at prepare. -1: neither.
inline int code_table_operand(const Node& n) {
    for (int v = 0; v < 2; ++v) {
        const Tensor *x = n.in[v], *c = n.in[1 - v];
        if (!x->is_const() && x->dtype == QNNB_UINT8 && c->is_const() && c->numel() == 1 &&
            n.out[0]->numel() == x->numel())
            return v;
    }
    return -1;
}

// Same dtype and the same encoding: the codes mean the same values (a move needs no re-encoding).
inline bool same_encoding(const Tensor& a, const Tensor& b) {
    const Encoding &x = a.encoding, &y = b.encoding;
    return a.dtype == b.dtype && x.kind == y.kind && x.bitwidth == y.bitwidth && x.is_signed == y.is_signed &&
           x.scales == y.scales && x.offsets == y.offsets;
}

// (N34): the message for what a kernel cannot honour.
inline std::string refusal(const Node& n, const std::string& what = "") {
    return "no npu kernel for " + n.op + (what.empty() ? std::string() : " with " + what) +
           "; convert with --float-fallback";
}

// The node's convert-time refusal (param npu_unsupported), if any.
inline bool refused(const Node& n, std::string& err) {
    if (!n.params.has("npu_unsupported")) return false;
    err = refusal(n, n.params.s("npu_unsupported"));
    return true;
}

// requantize() of (N2), computed in int64 when that is exact: |acc| < 2^31 and mult < 2^31 keep
// acc * mult + 2^(t-1) below 2^63; a shift t >= 63 of such a value rounds to 0. Bit-identical to
// requantize() for every input.
inline int64_t requantize_fast(int64_t acc, int32_t mult, int32_t shift) {
    const int t = 31 + shift;
    if (t >= 1 && acc > -(int64_t{1} << 31) && acc < (int64_t{1} << 31)) {
        if (t >= 63) return 0;
        return (acc * mult + (int64_t{1} << (t - 1))) >> t;
    }
    return requantize(acc, mult, shift);
}

// (N3) with requantize_fast.
inline int32_t requantize_out_fast(int64_t acc, int32_t mult, int32_t shift, int32_t zp, int32_t qmax) {
    return saturate(requantize_fast(acc, mult, shift) + zp, qmax);
}

// floor(a / b) for b > 0.
inline int64_t floor_div(int64_t a, int64_t b) {
    const int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

// floor(sqrt(v)), exactly: one result bit per step.
inline uint64_t isqrt64(uint64_t v) {
    uint64_t r = 0, bit = uint64_t{1} << 62;
    while (bit > v) bit >>= 2;
    while (bit) {
        if (v >= r + bit) {
            v -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
        bit >>= 2;
    }
    return r;
}

// A kernel table entry that only refuses (N34).
inline bool refuse(Node& n, std::string& err) {
    err = refusal(n);
    return false;
}
inline void run_nothing(Node&, const ExecContext&) {}

}  // namespace misc
}  // namespace npu
}  // namespace qnnb
