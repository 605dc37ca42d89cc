// Shared by the npu product kernels: docs/npu.md (N10), (N11), (N15).
#include "conv_common.h"

#include <cstdlib>
#include <cstring>

#if QNNB_NPU_VNNI
#include <immintrin.h>
#endif

namespace qnnb {
namespace npu {

bool read_channel_params(const Node& n, int64_t channels, const Tensor* weight, const Tensor* bias,
                         ChannelParams& p, std::string& err) {
    const std::string refuse = n.params.s("npu_refuse");
    if (!refuse.empty()) {
        err = refuse;
        return false;
    }
    p.channels = channels;
    p.mult.resize(static_cast<size_t>(channels));
    p.shift.resize(static_cast<size_t>(channels));
    if (!int_params(n, "npu_mult", static_cast<size_t>(channels), p.mult.data(), err) ||
        !int_params(n, "npu_shift", static_cast<size_t>(channels), p.shift.data(), err))
        return false;
    p.sign = static_cast<int32_t>(n.params.i("npu_acc_sign", 1));
    if (p.sign < -1 || p.sign > 1) {
        err = "npu_acc_sign must be -1, 0 or 1";
        return false;
    }
    p.blocks = 1;
    p.block_size = 0;
    if (weight && weight->encoding.present() && weight->encoding.block_axis >= 0) {
        const Encoding& e = weight->encoding;
        p.block_size = e.block_size;
        p.blocks = weight->dim(e.block_axis) / e.block_size;
        p.block_mult = n.params.ints("npu_block_mult");
        if (static_cast<int64_t>(p.block_mult.size()) != channels * p.blocks) {
            err = "parameter npu_block_mult missing or of the wrong length (convert the model for the npu again)";
            return false;
        }
        for (int64_t m : p.block_mult)
            if (m < 0 || m > (int64_t{1} << 20)) {
                err = "npu_block_mult out of [0, 2^20]";
                return false;
            }
    } else {
        p.block_mult.assign(static_cast<size_t>(channels), 1);
    }
    p.bias.assign(static_cast<size_t>(channels), 0);
    if (n.params.has("npu_bias")) {
        std::vector<int64_t> b = n.params.ints("npu_bias");
        if (static_cast<int64_t>(b.size()) != channels) {
            err = "parameter npu_bias of the wrong length (convert the model for the npu again)";
            return false;
        }
        for (int64_t& v : b)
            if (v > (int64_t{1} << 62) || v < -(int64_t{1} << 62)) {
                err = "npu_bias out of range";
                return false;
            }
        p.bias = b;
    } else if (bias && !n.params.i("npu_ignore_bias", 0)) {
        if (p.blockwise()) {
            err = "a block-wise weight needs its bias as npu_bias (convert the model for the npu again)";
            return false;
        }
        if (!bias->is_const() || bias->dtype != QNNB_INT32 || bias->numel() != channels) {
            err = "bias '" + bias->name + "' must be a constant int32 with one value per output channel (" +
                  dtype_name(bias->dtype) + "): docs/quantization.md (8)";
            return false;
        }
        const int32_t* b = bias->in<int32_t>();
        for (int64_t c = 0; c < channels; ++c) p.bias[static_cast<size_t>(c)] = b[c];
    }
    p.zp_y = zero_point(*n.out[0]);
    p.qmax = qmax_of(*n.out[0]);
    return true;
}

bool unpack_weight(const Tensor* w, std::vector<int16_t>& out, int32_t& wmax, std::string& err) {
    if (!w->is_const() || !w->encoding.present() || w->encoding.kind != QNNB_ENCODING_INT || !w->encoding.is_signed) {
        err = "weight '" + w->name + "' must be a constant signed integer weight";
        return false;
    }
    for (int32_t o : w->encoding.offsets)
        if (o != 0) {
            err = "weight '" + w->name + "' has a non-zero offset; the npu takes symmetric weights";
            return false;
        }
    const int64_t count = w->numel();
    out.resize(static_cast<size_t>(count));
    switch (w->dtype) {
        case QNNB_INT4: {
            const uint8_t* p = w->in<uint8_t>();
            for (int64_t i = 0; i < count; ++i) {
                const int v = (i % 2 == 0) ? (p[i / 2] & 0x0F) : (p[i / 2] >> 4);  // low nibble first
                out[static_cast<size_t>(i)] = static_cast<int16_t>(v >= 8 ? v - 16 : v);
            }
            wmax = 8;
            return true;
        }
        case QNNB_INT8: {
            const int8_t* p = w->in<int8_t>();
            for (int64_t i = 0; i < count; ++i) out[static_cast<size_t>(i)] = p[i];
            wmax = 128;
            return true;
        }
        case QNNB_INT16: {
            const int16_t* p = w->in<int16_t>();
            std::memcpy(out.data(), p, sizeof(int16_t) * static_cast<size_t>(count));
            wmax = 32768;
            return true;
        }
        default:
            err = "weight '" + w->name + "' has dtype " + dtype_name(w->dtype) + "; the npu takes int4, int8 or int16 weights";
            return false;
    }
}

int64_t operand_max(const Tensor& t) {
    const int bits = t.encoding.bitwidth;
    return t.encoding.is_signed ? (int64_t{1} << (bits - 1)) : (int64_t{1} << bits) - 1;
}

bool check_total_bound(const ChannelParams& p, int64_t a_max, int64_t b_max, int64_t k, std::string& err) {
    const __int128 m_max = p.blockwise() ? (__int128{1} << 20) : 1;
    if (static_cast<__int128>(a_max) * b_max * (k > 0 ? k : 1) * m_max >= (static_cast<__int128>(1) << 62)) {
        err = "the product has too many terms for the npu's int64 total (K = " + std::to_string(k) + ")";
        return false;
    }
    return true;
}

bool force_reference() {
    const char* v = std::getenv("QNNB_NPU_REFERENCE");
    return v && *v && std::strcmp(v, "0") != 0;
}

#if QNNB_NPU_VNNI
namespace {

inline __m512i bcast4(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

template <int NV>
void block_kernel(const int8_t* w, int64_t taps, int64_t kq, const uint8_t* const* rows, const int64_t* tap_off,
                  int32_t* acc) {
    __m512i c[kVnniRows][NV];
    for (int r = 0; r < kVnniRows; ++r)
        for (int v = 0; v < NV; ++v) c[r][v] = _mm512_setzero_si512();
    for (int64_t t = 0; t < taps; ++t) {
        const int64_t off = tap_off[t];
        const uint8_t* r0 = rows[0] + off;
        const uint8_t* r1 = rows[1] + off;
        const uint8_t* r2 = rows[2] + off;
        const uint8_t* r3 = rows[3] + off;
        const uint8_t* r4 = rows[4] + off;
        const uint8_t* r5 = rows[5] + off;
        const int8_t* wt = w + t * kq * NV * 64;
        for (int64_t q = 0; q < kq; ++q) {
            __m512i wv[NV];
            for (int v = 0; v < NV; ++v) wv[v] = _mm512_loadu_si512(wt + (q * NV + v) * 64);
            __m512i x;
#define QNNB_ROW(R, P)                                                        \
    x = bcast4(P + 4 * q);                                                    \
    for (int v = 0; v < NV; ++v) c[R][v] = _mm512_dpbusd_epi32(c[R][v], x, wv[v]);
            QNNB_ROW(0, r0)
            QNNB_ROW(1, r1)
            QNNB_ROW(2, r2)
            QNNB_ROW(3, r3)
            QNNB_ROW(4, r4)
            QNNB_ROW(5, r5)
#undef QNNB_ROW
        }
    }
    for (int r = 0; r < kVnniRows; ++r)
        for (int v = 0; v < NV; ++v) _mm512_storeu_si512(acc + r * kVnniBlock + v * 16, c[r][v]);
}

}  // namespace

void vnni_requant(const VnniRequant& rq, int64_t c0, int vectors, const int32_t* acc, int rows, int32_t* out) {
    if (rq.scalar_only) {
        for (int r = 0; r < rows; ++r)
            for (int i = 0; i < 16 * vectors; ++i) {
                const int64_t a = acc[r * kVnniBlock + i];
                out[r * kVnniBlock + i] = requantize_out((rq.negate ? -a : a) + rq.comp[c0 + i], rq.mult32[c0 + i],
                                                         rq.shift32[c0 + i], rq.zp, rq.qmax);
            }
        return;
    }
    const __m512i zp = _mm512_set1_epi64(rq.zp), qmax = _mm512_set1_epi64(rq.qmax), zero = _mm512_setzero_si512();
    for (int h = 0; h < 2 * vectors; ++h) {  // 8 channels at a time
        const int64_t c = c0 + 8 * h;
        const __m512i comp = _mm512_loadu_si512(rq.comp.data() + c), mult = _mm512_loadu_si512(rq.mult.data() + c);
        const __m512i round = _mm512_loadu_si512(rq.round.data() + c), t = _mm512_loadu_si512(rq.t.data() + c);
        for (int r = 0; r < rows; ++r) {
            __m512i a = _mm512_cvtepi32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + r * kVnniBlock + 8 * h)));
            if (rq.negate) a = _mm512_sub_epi64(zero, a);
            const __m512i total = _mm512_add_epi64(a, comp);
            const __m512i low = _mm512_cvtepi32_epi64(_mm512_cvtepi64_epi32(total));  // total if it fits int32
            const __mmask8 ok = _mm512_cmpeq_epi64_mask(low, total);
            __m512i q = _mm512_srav_epi64(_mm512_add_epi64(_mm512_mul_epi32(total, mult), round), t);
            q = _mm512_min_epi64(_mm512_max_epi64(_mm512_add_epi64(q, zp), zero), qmax);
            int32_t* o = out + r * kVnniBlock + 8 * h;
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(o), _mm512_cvtepi64_epi32(q));
            if (ok != 0xFF) {
                alignas(64) int64_t tv[8];
                _mm512_store_si512(tv, total);
                for (int l = 0; l < 8; ++l)
                    if (!((ok >> l) & 1))
                        o[l] = requantize_out(tv[l], rq.mult32[c + l], rq.shift32[c + l], rq.zp, rq.qmax);
            }
        }
    }
}

void vnni_block(const VnniWeights& p, int64_t cb, const uint8_t* const* rows, const int64_t* tap_off, int32_t* acc) {
    const int8_t* w = p.data.data() + cb * p.taps * p.kq * 4 * 64;
    switch (p.vectors(cb)) {
        case 1: block_kernel<1>(w, p.taps, p.kq, rows, tap_off, acc); break;
        case 2: block_kernel<2>(w, p.taps, p.kq, rows, tap_off, acc); break;
        case 3: block_kernel<3>(w, p.taps, p.kq, rows, tap_off, acc); break;
        default: block_kernel<4>(w, p.taps, p.kq, rows, tap_off, acc); break;
    }
}
#elif !QNNB_NPU_DOTPROD
void vnni_block(const VnniWeights&, int64_t, const uint8_t* const*, const int64_t*, int32_t*) {}
void vnni_requant(const VnniRequant&, int64_t, int, const int32_t*, int, int32_t*) {}
#endif

void prepare_requant(const ChannelParams& p, int64_t first, const std::vector<int64_t>& comp, bool negate,
                     VnniRequant& rq) {
    const int64_t count = static_cast<int64_t>(comp.size());
    const int64_t padded = (count + kVnniBlock - 1) / kVnniBlock * kVnniBlock;
    rq.comp.assign(static_cast<size_t>(padded), 0);
    rq.mult.assign(static_cast<size_t>(padded), 0);
    rq.round.assign(static_cast<size_t>(padded), 0);
    rq.t.assign(static_cast<size_t>(padded), 1);
    rq.mult32.assign(static_cast<size_t>(padded), 0);
    rq.shift32.assign(static_cast<size_t>(padded), 0);
    for (int64_t c = 0; c < count; ++c) {
        const int32_t mult = p.mult[first + c], shift = p.shift[first + c];
        const Int64Requantize r = Int64Requantize::of(mult, shift);
        rq.comp[c] = comp[c];
        rq.mult32[c] = mult;
        rq.shift32[c] = shift;
        rq.mult[c] = r.mult;
        rq.t[c] = r.t;
        rq.round[c] = r.round;
        if (!r.exact) rq.scalar_only = true;  // t <= 0 (refused at convert): requantize_out() for everything
    }
    rq.zp = p.zp_y;
    rq.qmax = p.qmax;
    rq.negate = negate;
}

}  // namespace npu
}  // namespace qnnb
