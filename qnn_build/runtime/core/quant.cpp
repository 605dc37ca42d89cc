#include "quant.h"

#include <cmath>

namespace qnnb {
namespace {

// The integer at flat index i of a constant, whatever its storage.
int64_t load_int(const Tensor& t, int64_t i) {
    const void* p = t.read_ptr();
    switch (t.dtype) {
        case QNNB_INT4: {
            uint8_t byte = static_cast<const uint8_t*>(p)[i / 2];
            int v = (i % 2 == 0) ? (byte & 0x0F) : (byte >> 4);
            return v >= 8 ? v - 16 : v;  // sign-extend the nibble
        }
        case QNNB_INT8: return static_cast<const int8_t*>(p)[i];
        case QNNB_UINT8: return static_cast<const uint8_t*>(p)[i];
        case QNNB_INT16: return static_cast<const int16_t*>(p)[i];
        case QNNB_UINT16: return static_cast<const uint16_t*>(p)[i];
        case QNNB_INT32: return static_cast<const int32_t*>(p)[i];
        default: return 0;
    }
}

int64_t stride_after(const Tensor& t, int axis) {
    int64_t s = 1;
    for (int d = axis + 1; d < t.rank(); ++d) s *= t.dim(d);
    return s;
}

}  // namespace

bool dequantize_constant(const Tensor& t, std::vector<float>& out, std::string& err) {
    const int64_t n = t.numel();
    out.resize(static_cast<size_t>(n));
    if (t.dtype == QNNB_FLOAT16) {
        const _Float16* h = static_cast<const _Float16*>(t.read_ptr());
        for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(h[i]);
        return true;
    }
    if (!check_encoding(t, err)) return false;
    const Encoding& e = t.encoding;
    const int64_t ch_stride = e.axis >= 0 ? stride_after(t, e.axis) : 0;
    const int64_t channels = e.axis >= 0 ? t.dim(e.axis) : 1;
    const int64_t blk_stride = e.block_axis >= 0 ? stride_after(t, e.block_axis) : 0;
    const int64_t blocks = e.block_axis >= 0 ? t.dim(e.block_axis) / e.block_size : 1;
    for (int64_t i = 0; i < n; ++i) {
        int64_t c = e.axis >= 0 ? (i / ch_stride) % channels : 0;
        int64_t b = e.block_axis >= 0 ? ((i / blk_stride) % t.dim(e.block_axis)) / e.block_size : 0;
        size_t k = static_cast<size_t>(c * blocks + b);
        out[i] = e.scales[k] * static_cast<float>(load_int(t, i) + e.offsets[k]);  // (1)
    }
    return true;
}

void fake_quantize(float* x, int64_t n, const Encoding& enc) {
    if (enc.kind == QNNB_ENCODING_FP16) {
        for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(static_cast<_Float16>(x[i]));  // (9)
        return;
    }
    const float scale = enc.scales[0];
    const float offset = static_cast<float>(enc.offsets[0]);
    const float qmin = enc.is_signed ? -std::ldexp(1.f, enc.bitwidth - 1) : 0.f;
    const float qmax = enc.is_signed ? std::ldexp(1.f, enc.bitwidth - 1) - 1.f : std::ldexp(1.f, enc.bitwidth) - 1.f;
    for (int64_t i = 0; i < n; ++i) {
        float q = std::nearbyint(x[i] / scale) - offset;     // (2), round half to even
        q = q < qmin ? qmin : (q > qmax ? qmax : q);
        x[i] = scale * (q + offset);                          // (1)
    }
}

void quantize_to(const float* x, int64_t n, const Encoding& enc, void* out, qnnb_dtype dtype) {
    const float scale = enc.scales[0];
    const float offset = static_cast<float>(enc.offsets[0]);
    const float qmax = std::ldexp(1.f, enc.bitwidth) - 1.f;
    for (int64_t i = 0; i < n; ++i) {
        float q = std::nearbyint(x[i] / scale) - offset;
        q = q < 0.f ? 0.f : (q > qmax ? qmax : q);
        if (dtype == QNNB_UINT8) static_cast<uint8_t*>(out)[i] = static_cast<uint8_t>(q);
        else static_cast<uint16_t*>(out)[i] = static_cast<uint16_t>(q);
    }
}

void dequantize_to(const void* q, qnnb_dtype dtype, int64_t n, const Encoding& enc, float* out) {
    const float scale = enc.scales[0];
    const int32_t offset = enc.offsets[0];
    for (int64_t i = 0; i < n; ++i) {
        int32_t v = dtype == QNNB_UINT8 ? static_cast<const uint8_t*>(q)[i] : static_cast<const uint16_t*>(q)[i];
        out[i] = scale * static_cast<float>(v + offset);
    }
}

}  // namespace qnnb
