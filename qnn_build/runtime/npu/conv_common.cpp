// Shared by the npu product kernels: docs/npu.md (N10), (N11), (N15).
#include "conv_common.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace qnnb {
namespace npu {

namespace {

// One whole 16 x 16 tile: dst row c = byte c of each of the 16 rows.
void transpose_tile(const uint8_t* const* src, uint8_t* dst, int64_t ds) {
#if defined(__SSE2__)
    // Four rounds of interleaving, each doubling the rows of one column kept together in a lane
    // (1 -> 2 -> 4 -> 8 -> 16); the comments name the columns a register then holds.
    __m128i a[16], b[16];
    for (int r = 0; r < 16; ++r) a[r] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src[r]));
    for (int i = 0; i < 8; ++i) {  // pairs of rows: 16-bit lanes (row 2i, row 2i + 1) per column
        b[i] = _mm_unpacklo_epi8(a[2 * i], a[2 * i + 1]);      // columns 0-7
        b[i + 8] = _mm_unpackhi_epi8(a[2 * i], a[2 * i + 1]);  // columns 8-15
    }
    for (int h = 0; h < 2; ++h)  // quads of rows: 32-bit lanes
        for (int i = 0; i < 4; ++i) {
            a[h * 8 + i] = _mm_unpacklo_epi16(b[h * 8 + 2 * i], b[h * 8 + 2 * i + 1]);      // columns h·8 + 0-3
            a[h * 8 + i + 4] = _mm_unpackhi_epi16(b[h * 8 + 2 * i], b[h * 8 + 2 * i + 1]);  // columns h·8 + 4-7
        }
    for (int q = 0; q < 4; ++q)  // octets of rows: 64-bit lanes
        for (int i = 0; i < 2; ++i) {
            b[q * 4 + i] = _mm_unpacklo_epi32(a[q * 4 + 2 * i], a[q * 4 + 2 * i + 1]);      // columns q·4 + 0-1
            b[q * 4 + i + 2] = _mm_unpackhi_epi32(a[q * 4 + 2 * i], a[q * 4 + 2 * i + 1]);  // columns q·4 + 2-3
        }
    for (int c = 0; c < 8; ++c) {  // b[2c], b[2c + 1]: rows 0-7 and 8-15 of columns 2c and 2c + 1
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * c * ds), _mm_unpacklo_epi64(b[2 * c], b[2 * c + 1]));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * c + 1) * ds), _mm_unpackhi_epi64(b[2 * c], b[2 * c + 1]));
    }
#else
    for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 16; ++c) dst[c * ds + r] = src[r][c];
#endif
}

}  // namespace

void transpose_bytes(const uint8_t* src, int64_t src_stride, int64_t rows, int64_t cols, uint8_t* dst,
                     int64_t dst_stride) {
    const uint8_t* tile[16];
    for (int64_t r0 = 0; r0 < rows; r0 += 16) {
        const int64_t rn = std::min<int64_t>(16, rows - r0);
        for (int64_t c0 = 0; c0 < cols; c0 += 16) {
            const int64_t cn = std::min<int64_t>(16, cols - c0);
            const uint8_t* s = src + r0 * src_stride + c0;
            uint8_t* d = dst + c0 * dst_stride + r0;
            if (rn == 16 && cn == 16) {
                for (int r = 0; r < 16; ++r) tile[r] = s + r * src_stride;
                transpose_tile(tile, d, dst_stride);
                continue;
            }
            // An edge tile byte by byte: never a byte read or written outside, and cheaper than
            // going through a whole tile for the few channels or pixels of a small map.
            for (int64_t c = 0; c < cn; ++c)
                for (int64_t r = 0; r < rn; ++r) d[c * dst_stride + r] = s[r * src_stride + c];
        }
    }
}

void stage_pixels(const uint8_t* src, int64_t plane_stride, int64_t channels, int64_t width, uint8_t* dst,
                  int64_t pixel, int64_t padded, uint8_t zp) {
    transpose_bytes(src, plane_stride, channels, width, dst, pixel);
    if (padded > channels)
        for (int64_t iw = 0; iw < width; ++iw)
            std::memset(dst + iw * pixel + channels, zp, static_cast<size_t>(padded - channels));
}

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

#if !QNNB_NPU_BLOCK
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
    rq.avx512 = active_isa() == Isa::kAvx512Vnni;
}

}  // namespace npu
}  // namespace qnnb
