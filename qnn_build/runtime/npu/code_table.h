// Code tables: a node whose output is a function of one integer input code runs as y[i] = table[x[i]]
// (a re-encoding (N20), an op of an 8-bit activation and a one-element constant (N4)-(N5), (N30)-(N32)).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "../core/parallel.h"
#include "../core/prepared.h"
#include "npu.h"

namespace qnnb {
namespace npu {

// Every 8-bit code once, in order: the operand a code table is computed on.
struct AllCodes {
    uint8_t q[256];
    constexpr AllCodes() : q() {
        for (int i = 0; i < 256; ++i) q[i] = static_cast<uint8_t>(i);
    }
};
inline constexpr AllCodes kAllCodes;

// y[i] = table[x[i]] for i < n. The pointers are this function's own: a kernel's loop reading them
// through a lambda's captures loads them again after every byte stored (a char store may alias them).
template <class TX, class TY>
inline void lookup(const TX* x, TY* y, const int32_t* table, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<TY>(table[x[i]]);
}

// lookup() on bytes, 64 at a time with AVX-512 VBMI when `fast` (code_table_x86.cpp): the same bytes.
// fast_byte_lookup(): the CPU has it and the environment allows it (core/isa.h); a caller reads it
// once per node run or at prepare.
bool fast_byte_lookup();
void lookup_bytes(const uint8_t* x, uint8_t* y, const int32_t* table, int64_t n, bool fast);

// Below this many codes a node's lookup stays scalar: the vector form's set-up (the table narrowed to
// bytes, fast_byte_lookup()'s read of the environment) costs more than it saves on an LSTM's gates.
constexpr int64_t kFastLookupMin = 256;

// y[i] = table[x[i]] over whole tensors. `table` has an entry for every code x can hold; chunks of
// 16K codes are shared among the threads.
inline void apply_code_table(const Tensor& src, Tensor& dst, const int32_t* table, const ExecContext& ctx) {
    constexpr int64_t kChunk = 16384;
    const int64_t total = src.numel();
    const bool fast = total >= kFastLookupMin && fast_byte_lookup();
    with_int_type(src.dtype, [&](auto tx) {
        with_int_type(dst.dtype, [&](auto ty) {
            using TX = decltype(tx);
            using TY = decltype(ty);
            const TX* x = src.in<TX>();
            TY* y = dst.out<TY>();
            parallel_for(ctx, (total + kChunk - 1) / kChunk, [&](int64_t c) {
                const int64_t begin = c * kChunk, len = std::min(total, begin + kChunk) - begin;
                if constexpr (std::is_same_v<TX, uint8_t> && std::is_same_v<TY, uint8_t>)
                    lookup_bytes(x + begin, y + begin, table, len, fast);
                else
                    lookup(x + begin, y + begin, table, len);
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

}  // namespace npu
}  // namespace qnnb
