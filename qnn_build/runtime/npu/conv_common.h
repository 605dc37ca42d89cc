// Shared by the npu's product kernels (conv.cpp: Conv, ConvTranspose; matmul.cpp: Gemm, MatMul):
// the per-channel parameters of docs/npu.md (N10)-(N11), constant weights unpacked once, the
// accumulator bound, and the u8 x s8 block kernel of the fast paths (N15).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../core/isa.h"
#include "../core/prepared.h"
#include "npu.h"

// The block fast path exists on this target: vnni_block() and vnni_requant() below are real. On
// x86-64 (block_x86.cpp) its AVX2 form is the baseline and an AVX-512 VNNI form is taken at run time
// where the CPU has it (core/isa.h); on Arm its dot-product form (block_dotprod.cpp, the aarch64
// targets' -mcpu=...+dotprod).
#if defined(__AVX2__) || defined(__ARM_FEATURE_DOTPROD)
#define QNNB_NPU_BLOCK 1
#else
#define QNNB_NPU_BLOCK 0
#endif

namespace qnnb {
namespace npu {

// (N10)/(N11) per output channel c: total = sign * sum_j block_mult[c][j] * acc_j + bias[c], then
// q = clamp(requantize(total, mult[c], shift[c]) + zp_y, 0, qmax).
struct ChannelParams {
    int64_t channels = 0;
    int64_t blocks = 1;                // K blocks of a block-wise weight; 1 otherwise
    int64_t block_size = 0;            // elements of the weight's input axis per block (0: not block-wise)
    std::vector<int32_t> mult, shift;  // [channel]
    std::vector<int64_t> bias;         // [channel], accumulator units
    std::vector<int64_t> block_mult;   // [channel][block]; all 1 when not block-wise
    int32_t sign = 1;                  // npu_acc_sign: Gemm's sign(alpha)
    int32_t zp_y = 0, qmax = 255;

    bool blockwise() const { return block_size > 0; }
    int32_t out(int64_t c, int64_t total) const {
        return requantize_out(total, mult[c], shift[c], zp_y, qmax);
    }
    // The same result in int64 arithmetic where that is exact (requantize_fast): for the fast paths.
    int32_t out_fast(int64_t c, int64_t total) const {
        return requantize_out_fast(total, mult[c], shift[c], zp_y, qmax);
    }
};

// Reads npu_mult/npu_shift (and npu_block_mult, npu_acc_sign) for `channels` channels, the bias
// (npu_bias, else the int32 tensor `bias`, else zero), and the output's zero point and range.
// `weight` gives the block size when its encoding is block-wise. Reports npu_refuse.
bool read_channel_params(const Node& n, int64_t channels, const Tensor* weight, const Tensor* bias,
                         ChannelParams& p, std::string& err);

// A constant weight's integers in storage order (INT4 unpacked, INT8/INT16 widened), and the
// largest |w| its storage allows (8, 128, 32768). Checks it is a signed symmetric weight.
bool unpack_weight(const Tensor* w, std::vector<int16_t>& out, int32_t& wmax, std::string& err);

// The largest |q - zp| of an integer operand: 2^b - 1 for an activation, 2^(b-1) for a signed one.
int64_t operand_max(const Tensor& t);

// True when K products of operands bounded by a_max and b_max, summed, stay below 2^31 (N10).
inline bool fits_int32(int64_t a_max, int64_t b_max, int64_t k) {
    return static_cast<__int128>(a_max) * b_max * (k > 0 ? k : 1) < (static_cast<__int128>(1) << 31);
}

// (N10)/(N11): |sum_j m · acc_j| <= a_max · b_max · K · max(m) must stay below 2^62 (with |bias| <=
// 2^62 the total then fits int64). False with `err` set for a layer too large for that.
bool check_total_bound(const ChannelParams& p, int64_t a_max, int64_t b_max, int64_t k, std::string& err);

// QNNB_NPU_REFERENCE=1 in the environment at prepare: every product kernel runs its plain
// reference loop (tests compare it with the fast paths byte for byte).
bool force_reference();

// dst[c * dst_stride + r] = src[r * src_stride + c] for r < rows, c < cols: bytes transposed, the
// conv fast paths' layout changes (an NCHW plane's channel rows to pixels of channels, a chunk's
// pixels of channels back to channel planes), 16 x 16 bytes per step.
void transpose_bytes(const uint8_t* src, int64_t src_stride, int64_t rows, int64_t cols, uint8_t* dst,
                     int64_t dst_stride);

// One input row of `channels` planes (plane_stride apart, `width` codes each) as pixels `pixel` bytes
// apart, each its channels' codes then zp up to `padded` channels: the conv fast paths' staged input.
void stage_pixels(const uint8_t* src, int64_t plane_stride, int64_t channels, int64_t width, uint8_t* dst,
                  int64_t pixel, int64_t padded, uint8_t zp);

// ---- the block kernel (N15), named after the VNNI instruction it was written for -----------------
// acc[r][c] = sum_t sum_k x_r[tap_off[t] + k] * w[c][t][k] for 6 rows r and up to 64 channels c of
// one channel block: x unsigned bytes (K padded to a multiple of 4 per tap), w signed bytes packed
// by pack_vnni. Exact in int32 while the (N10) bound holds (rows are never more than K · 255 · 128).
constexpr int kVnniRows = 6;
constexpr int kVnniBlock = 64;  // channels per block: 4 vectors of 16

struct VnniWeights {
    int64_t channels = 0, taps = 1, kq = 0;  // kq: K per tap in groups of 4
    int64_t cblocks = 0;
    ArrayView<int8_t> data;                  // [cblock][tap][kq][vector][16 channels][4]
    ArrayView<int32_t> colsum;               // sum of each channel's weights (for the zero point)
    bool avx512 = false;                     // the AVX-512 VNNI form (core/isa.h), chosen at prepare
    int vectors(int64_t cb) const {
        const int64_t left = channels - cb * kVnniBlock;
        return static_cast<int>(left >= kVnniBlock ? 4 : (left + 15) / 16);
    }
};

// w(c, t, k) for channel c < channels, tap t < taps, k < k_per_tap: an int8 value. The packed
// weights and their sums are the node's prepared arrays `slot` and `slot + 1` (core/prepared.h):
// a context binary carries them, packed.
template <class W>
void pack_vnni(Node& n, uint32_t slot, int64_t channels, int64_t taps, int64_t k_per_tap, W w, VnniWeights& p) {
    p.channels = channels;
    p.taps = taps;
    p.kq = (k_per_tap + 3) / 4;
    p.cblocks = (channels + kVnniBlock - 1) / kVnniBlock;
    p.avx512 = active_isa() == Isa::kAvx512Vnni;
    const int64_t block_bytes = taps * p.kq * 4 * 64;
    // Every (channel block, tap, kq, vector, lane, byte) position with its channel c and k.
    auto each = [&](auto visit) {
        for (int64_t cb = 0; cb < p.cblocks; ++cb) {
            const int nv = p.vectors(cb);
            for (int64_t t = 0; t < taps; ++t)
                for (int64_t q = 0; q < p.kq; ++q)
                    for (int v = 0; v < nv; ++v)
                        for (int lane = 0; lane < 16; ++lane)
                            for (int i = 0; i < 4; ++i) {
                                const int64_t c = cb * kVnniBlock + v * 16 + lane, k = q * 4 + i;
                                const int value = (c < channels && k < k_per_tap) ? w(c, t, k) : 0;
                                visit(cb * block_bytes + (((t * p.kq + q) * nv + v) * 16 + lane) * 4 + i,
                                      cb * kVnniBlock + v * 16 + lane, value);
                            }
        }
    };
    const size_t columns = static_cast<size_t>(p.cblocks * kVnniBlock);
    std::vector<int32_t> sums;  // summed in the same pass when the weights are packed here
    p.data = n.prepared->get<int8_t>(slot, static_cast<size_t>(p.cblocks * block_bytes), [&](int8_t* data) {
        sums.assign(columns, 0);
        each([&](int64_t at, int64_t column, int value) {
            data[at] = static_cast<int8_t>(value);
            sums[static_cast<size_t>(column)] += value;
        });
    });
    p.colsum = n.prepared->get<int32_t>(slot + 1, columns, [&](int32_t* colsum) {
        if (!sums.empty()) std::copy(sums.begin(), sums.end(), colsum);
        else each([&](int64_t, int64_t column, int value) { colsum[column] += value; });
    });
}

// One channel block cb for 6 rows: rows[r] + tap_off[t] is row r's 4·kq bytes for tap t.
// acc is [6][64]. Only with QNNB_NPU_BLOCK.
void vnni_block(const VnniWeights& p, int64_t cb, const uint8_t* const* rows, const int64_t* tap_off, int32_t* acc);

// (N2)-(N3) on a block's accumulators, 8 channels per vector: total = ±acc + comp[c], then
// requantize, + zp_y, clamp. Exactly requantize_out(): with |total| < 2^31 and mult < 2^31 the
// product and its rounding term fit int64 (a shift t >= 63 gives 0 for such a product, so those
// channels take mult 0); a total outside int32 goes through requantize_out() itself.
struct VnniRequant {
    std::vector<int64_t> comp, mult, round, t;  // per channel, padded to whole blocks
    std::vector<int32_t> mult32, shift32;       // the (N1) pair, for the scalar fallback
    int32_t zp = 0, qmax = 255;
    bool negate = false;
    bool scalar_only = false;
    bool avx512 = false;  // the AVX-512 form (core/isa.h), chosen at prepare
};
// Channels [first, first + comp.size()) of p, comp[i] for channel first + i; negate: total = −acc + comp
// (Gemm with alpha < 0).
void prepare_requant(const ChannelParams& p, int64_t first, const std::vector<int64_t>& comp, bool negate,
                     VnniRequant& rq);
// out[r * 64 + i] for rows r < rows and i < 16 · vectors: channel c0 + i of row r.
void vnni_requant(const VnniRequant& rq, int64_t c0, int vectors, const int32_t* acc, int rows, int32_t* out);

// The conv fast paths' output positions per task (16 calls of the block kernel).
constexpr int64_t kPositionChunk = 16 * kVnniRows;

// One task's requantized outputs of one channel block, kept until the chunk is whole and then
// written to the channel planes at once, instead of touching 64 output planes every 6 positions.
// 8-bit codes are staged pixel-major and leave through transpose_bytes; 16-bit ones channel-major.
template <class TY>
struct ChunkStage {
    alignas(64) TY v[kVnniBlock * kPositionChunk];
    // q[r * 64 + i] (vnni_requant's rows) of positions r0 + r < r0 + rn, channels i < cn.
    void put(const int32_t* q, int64_t r0, int64_t rn, int64_t cn) {
        for (int64_t r = 0; r < rn; ++r)
            for (int64_t i = 0; i < cn; ++i) {
                if constexpr (sizeof(TY) == 1) v[(r0 + r) * kVnniBlock + i] = static_cast<TY>(q[r * kVnniBlock + i]);
                else v[i * kPositionChunk + r0 + r] = static_cast<TY>(q[r * kVnniBlock + i]);
            }
    }
    // y[i * plane + p] for channels i < cn and the chunk's positions p < count.
    void copy_out(TY* y, int64_t plane, int64_t count, int64_t cn) const {
        if constexpr (sizeof(TY) == 1) {
            transpose_bytes(reinterpret_cast<const uint8_t*>(v), kVnniBlock, count, cn, reinterpret_cast<uint8_t*>(y), plane);
            return;
        }
        for (int64_t i = 0; i < cn; ++i)
            std::memcpy(y + i * plane, v + i * kPositionChunk, static_cast<size_t>(count) * sizeof(TY));
    }
};

}  // namespace npu
}  // namespace qnnb
