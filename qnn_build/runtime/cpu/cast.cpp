// Cast between every pair of runtime dtypes, as ONNX (and numpy) define it: float -> int truncates
// toward zero, int -> narrower int wraps, anything -> bool is "!= 0", float16 rounds to nearest even.
#include <algorithm>
#include <cstring>
#include <type_traits>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "../core/parallel.h"
#include "movement.h"

namespace qnnb {
namespace movement {
namespace {

struct Half {
    uint16_t bits;
};
struct Bool {
    uint8_t v;
};

inline uint32_t float_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

inline float bits_float(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// Round to nearest even, with float16 subnormals, infinities and NaN.
inline uint16_t float_to_half(float value) {
    const uint32_t f32_inf = 255u << 23, f16_overflow = (127u + 16u) << 23;
    const uint32_t denorm_magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    uint32_t f = float_bits(value);
    const uint32_t sign = f & 0x80000000u;
    f ^= sign;
    uint16_t h;
    if (f >= f16_overflow) {
        h = f > f32_inf ? 0x7e00 : 0x7c00;
    } else if (f < (113u << 23)) {  // below the smallest normal half: let the FPU round the subnormal
        h = static_cast<uint16_t>(float_bits(bits_float(f) + bits_float(denorm_magic)) - denorm_magic);
    } else {
        const uint32_t mant_odd = (f >> 13) & 1u;
        f += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + mant_odd;
        h = static_cast<uint16_t>(f >> 13);
    }
    return static_cast<uint16_t>(h | (sign >> 16));
}

inline float half_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        const float v = static_cast<float>(mant) * (1.0f / 16777216.0f);  // mant * 2^-24
        return sign ? -v : v;
    }
    return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

// The value a stored element stands for: float for float16, 0/1 for bool, itself otherwise.
template <class S> inline auto load(S v) { return v; }
inline float load(Half v) { return half_to_float(v.bits); }
inline uint8_t load(Bool v) { return v.v; }

// Truncation toward zero; NaN and values beyond int64 become INT64_MIN (what x86 gives), then wrap.
template <class D>
inline D truncate_float(float x) {
    const bool in_range = x > -9.2233720e18f && x < 9.2233720e18f;
    const int64_t w = in_range ? static_cast<int64_t>(x) : INT64_MIN;
    return static_cast<D>(w);
}

template <class D, class X>
inline D store(X x) {
    if constexpr (std::is_same_v<D, Bool>) {
        return Bool{static_cast<uint8_t>(x != 0)};
    } else if constexpr (std::is_same_v<D, Half>) {
        return Half{float_to_half(static_cast<float>(x))};
    } else if constexpr (std::is_floating_point_v<X> && std::is_integral_v<D>) {
        return truncate_float<D>(x);
    } else {
        return static_cast<D>(x);
    }
}

// Elements [begin, end): F16C converts 8 floats <-> halves at once (same rounding as float_to_half).
template <class S, class D>
void cast_range(const S* x, D* y, int64_t begin, int64_t end) {
    int64_t i = begin;
#if defined(__F16C__)
    if constexpr (std::is_same_v<S, float> && std::is_same_v<D, Half>) {
        for (; i + 8 <= end; i += 8)
            _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                             _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    } else if constexpr (std::is_same_v<S, Half> && std::is_same_v<D, float>) {
        for (; i + 8 <= end; i += 8)
            _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
    }
#endif
    for (; i < end; ++i) y[i] = store<D>(load(x[i]));
}

template <class S, class D>
void cast_loop(const void* src, void* dst, int64_t total, const ExecContext& ctx) {
    const S* x = static_cast<const S*>(src);
    D* y = static_cast<D*>(dst);
    constexpr int64_t kChunk = 16384;
    parallel_for(ctx, (total + kChunk - 1) / kChunk, [&](int64_t c) {
        cast_range(x, y, c * kChunk, std::min(total, (c + 1) * kChunk));
    });
}

using CastFn = void (*)(const void*, void*, int64_t, const ExecContext&);

// Calls fn(T{}) with the storage type of `dt`.
template <class Fn>
bool with_storage_type(qnnb_dtype dt, Fn fn) {
    switch (dt) {
        case QNNB_FLOAT32: fn(float{}); return true;
        case QNNB_UINT8: fn(uint8_t{}); return true;
        case QNNB_INT8: fn(int8_t{}); return true;
        case QNNB_UINT16: fn(uint16_t{}); return true;
        case QNNB_INT16: fn(int16_t{}); return true;
        case QNNB_INT32: fn(int32_t{}); return true;
        case QNNB_INT64: fn(int64_t{}); return true;
        case QNNB_BOOL: fn(Bool{}); return true;
        case QNNB_FLOAT16: fn(Half{}); return true;
        default: return false;
    }
}

CastFn find_cast(qnnb_dtype from, qnnb_dtype to) {
    CastFn fn = nullptr;
    with_storage_type(from, [&](auto s) {
        with_storage_type(to, [&](auto d) { fn = cast_loop<decltype(s), decltype(d)>; });
    });
    return fn;
}

struct CastState {
    CastFn fn = nullptr;
};

}  // namespace

bool prepare_cast(Node& n, std::string& err) {
    const Tensor& x = *n.in[0];
    const Tensor& y = *n.out[0];
    if (x.numel() != y.numel()) {
        err = "input and output sizes differ";
        return false;
    }
    CastFn fn = find_cast(x.dtype, y.dtype);
    if (!fn) {
        err = std::string("no cast from ") + dtype_name(x.dtype) + " to " + dtype_name(y.dtype);
        return false;
    }
    n.make_state<CastState>().fn = fn;
    return true;
}

void run_cast(Node& n, const ExecContext& ctx) {
    n.state_as<CastState>().fn(n.in[0]->read_ptr(), n.out[0]->data, n.out[0]->numel(), ctx);
}

}  // namespace movement
}  // namespace qnnb
