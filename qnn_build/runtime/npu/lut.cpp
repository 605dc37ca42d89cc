// Unary ops as lookup tables built at convert time: docs/npu.md (N6) exact for 8-bit inputs, (N7)
// integer interpolation for 16-bit inputs with (N7c) exact patches where it misses, or (N7a)/(N7b) an
// exact table of every 16-bit code.
#include "../core/parallel.h"
#include "code_table.h"
#include "npu.h"
#include "refusal.h"

namespace qnnb {
namespace npu {
namespace {

constexpr int kKnotStep = 64;                   // (N7): a knot every 64 input codes
constexpr int kKnots = 65536 / kKnotStep + 1;   // 1025
constexpr size_t kAllCodes16 = 65536;            // (N7a): one entry per 16-bit code

struct LutState {
    std::vector<int32_t> table;  // 256 entries (8-bit input), kKnots knots (+ patches) or kAllCodes16 entries
    std::vector<int32_t> patch;  // (N7c): per knot interval, its patch's index in `table` after the knots, or -1
    int32_t qmax = 0;
};

// (N7c): the knot intervals listed in npu_lut_patches (increasing) take their exact entries, kKnotStep
// each, from the table after the knots.
bool read_patches(const Node& n, size_t size, LutState& s, std::string& err) {
    std::vector<int64_t> k = n.params.ints("npu_lut_patches");
    if (size != kKnots + k.size() * kKnotStep) {
        err = "lookup table of the wrong size for its patches (convert the model for the npu again)";
        return false;
    }
    if (k.empty()) return true;
    s.patch.assign(kKnots - 1, -1);
    for (size_t i = 0; i < k.size(); ++i) {
        if (k[i] < 0 || k[i] >= kKnots - 1 || (i && k[i] <= k[i - 1])) {
            err = "lookup table patches out of order (convert the model for the npu again)";
            return false;
        }
        s.patch[k[i]] = static_cast<int32_t>(kKnots + i * kKnotStep);
    }
    return true;
}

bool prepare_lut(Node& n, std::string& err) {
    if (refused(n, err)) return false;  // Mod by a divisor that is no constant
    if (!check_int_operand(n.input(0), err) || !check_int_output(n.output(0), err)) return false;
    Tensor* x = n.in[0];
    if (x->dtype != QNNB_UINT8 && x->dtype != QNNB_UINT16) {
        err = "input must be an 8- or 16-bit activation";
        return false;
    }
    if (x->numel() != n.out[0]->numel()) {  // Mod's constant divisor must not broadcast the input
        err = "input and output sizes differ";
        return false;
    }
    auto& s = n.make_state<LutState>();
    std::vector<int64_t> t = n.params.ints("npu_lut");
    if (x->dtype == QNNB_UINT8 ? t.size() != 256 : t.size() < kKnots) {
        err = "lookup table missing or of the wrong size (convert the model for the npu again)";
        return false;
    }
    if (x->dtype == QNNB_UINT16 && t.size() != kAllCodes16 && !read_patches(n, t.size(), s, err)) return false;
    s.table.assign(t.begin(), t.end());
    s.qmax = qmax_of(*n.out[0]);
    return true;
}

template <class TY>
void run_lut16(const LutState& s, const uint16_t* x, TY* y, int64_t n) {
    if (s.table.size() == kAllCodes16) {  // (N7a)
        for (int64_t i = 0; i < n; ++i) y[i] = static_cast<TY>(saturate(s.table[x[i]], s.qmax));
        return;
    }
    for (int64_t i = 0; i < n; ++i) {
        const int32_t k = x[i] >> 6, r = x[i] & 63;
        if (!s.patch.empty() && s.patch[k] >= 0) {  // (N7c)
            y[i] = static_cast<TY>(saturate(s.table[s.patch[k] + r], s.qmax));
            continue;
        }
        const int64_t lo = s.table[k], hi = s.table[k + 1];
        y[i] = static_cast<TY>(saturate(lo + (((hi - lo) * r + 32) >> 6), s.qmax));  // (N7)
    }
}

constexpr int64_t kChunk = 16384;

void run_lut(Node& n, const ExecContext& ctx) {
    const LutState& s = n.state_as<LutState>();
    const int64_t total = n.out[0]->numel();
    const bool fast = total >= kFastLookupMin && fast_byte_lookup();
    with_int_type(n.out[0]->dtype, [&](auto ty) {
        using TY = decltype(ty);
        TY* y = n.out[0]->out<TY>();
        parallel_for(ctx, (total + kChunk - 1) / kChunk, [&](int64_t c) {
            const int64_t begin = c * kChunk, len = std::min(kChunk, total - begin);
            if (n.in[0]->dtype == QNNB_UINT8) {  // (N6)
                if constexpr (std::is_same_v<TY, uint8_t>) lookup_bytes(n.in[0]->in<uint8_t>() + begin, y + begin, s.table.data(), len, fast);
                else lookup(n.in[0]->in<uint8_t>() + begin, y + begin, s.table.data(), len);
            } else run_lut16(s, n.in[0]->in<uint16_t>() + begin, y + begin, len);
        });
    });
}

}  // namespace

// Every unary op the converter tabulates runs on the same kernel (Mod: by a constant divisor).
const Kernel kLutKernels[] = {
    {"Relu", prepare_lut, run_lut},       {"LeakyRelu", prepare_lut, run_lut}, {"Elu", prepare_lut, run_lut},
    {"Clip", prepare_lut, run_lut},       {"Sigmoid", prepare_lut, run_lut},   {"HardSigmoid", prepare_lut, run_lut},
    {"HardSwish", prepare_lut, run_lut},  {"Tanh", prepare_lut, run_lut},      {"Erf", prepare_lut, run_lut},
    {"Gelu", prepare_lut, run_lut},       {"Softplus", prepare_lut, run_lut},  {"Sqrt", prepare_lut, run_lut},
    {"Exp", prepare_lut, run_lut},        {"Log", prepare_lut, run_lut},       {"Neg", prepare_lut, run_lut},
    {"Abs", prepare_lut, run_lut},        {"Reciprocal", prepare_lut, run_lut},  {"Sin", prepare_lut, run_lut},
    {"Cos", prepare_lut, run_lut},        {"Softsign", prepare_lut, run_lut},  {"Mish", prepare_lut, run_lut},
    {"Selu", prepare_lut, run_lut},       {"Celu", prepare_lut, run_lut},      {"Floor", prepare_lut, run_lut},
    {"Ceil", prepare_lut, run_lut},       {"Round", prepare_lut, run_lut},     {"Sign", prepare_lut, run_lut},
    {"Mod", prepare_lut, run_lut},
};

extern const KernelTable kNpuLutKernels = {kLutKernels, sizeof(kLutKernels) / sizeof(kLutKernels[0])};

}  // namespace npu
}  // namespace qnnb
