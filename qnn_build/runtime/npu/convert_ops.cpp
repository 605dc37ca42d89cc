// The npu's conversion unit between its integer and fp16 domains, for the boundary nodes that
// `convert --float-fallback` inserts around nodes kept in fp16: docs/npu.md (N40) Dequantize
// (integer -> fp16) and (N41) Quantize (fp16 -> integer). These are the only npu kernels that touch
// floating point; they compute exactly what the host does at the graph's inputs and outputs
// (core/quant.h quantize_to / dequantize_to), so the cpu simulation gives the same values.
#include "../core/quant.h"
#include "npu.h"

namespace qnnb {
namespace npu {
namespace {

bool is_fp16_activation(const Tensor* t) {
    return t && !t->is_const() && t->dtype == QNNB_FLOAT32 && t->encoding.present() &&
           t->encoding.kind == QNNB_ENCODING_FP16;
}

bool same_size(const Node& n, std::string& err) {
    if (n.in[0]->numel() != n.out[0]->numel()) {
        err = "input and output sizes differ";
        return false;
    }
    return true;
}

// (N40): y = half(s_x · (q_x + offset_x)), the product in float32, rounded to half by the runtime
// after the node (fp16 storage).
bool prepare_dequantize(Node& n, std::string& err) {
    if (!check_int_operand(n.input(0), err)) return false;
    if (n.in[0]->is_const() || (n.in[0]->dtype != QNNB_UINT8 && n.in[0]->dtype != QNNB_UINT16)) {
        err = "input must be an 8- or 16-bit integer activation";
        return false;
    }
    if (!is_fp16_activation(n.output(0))) {
        err = "output must be an fp16 activation";
        return false;
    }
    return same_size(n, err);
}

void run_dequantize(Node& n, const ExecContext&) {
    const Tensor& x = *n.in[0];
    dequantize_to(x.read_ptr(), x.dtype, x.numel(), x.encoding, n.out[0]->out<float>());
}

// (N41): q_y = clamp(round_half_even(x / s_y) − offset_y, 0, 2^b − 1), x / s_y in float32.
bool prepare_quantize(Node& n, std::string& err) {
    if (!is_fp16_activation(n.input(0))) {
        err = "input must be an fp16 activation";
        return false;
    }
    if (!check_int_output(n.output(0), err)) return false;
    if (n.out[0]->encoding.kind != QNNB_ENCODING_INT || n.out[0]->encoding.scales.size() != 1) {
        err = "output must have a per-tensor integer encoding";
        return false;
    }
    return same_size(n, err);
}

void run_quantize(Node& n, const ExecContext&) {
    const Tensor& y = *n.out[0];
    quantize_to(n.in[0]->in<float>(), y.numel(), y.encoding, y.data, y.dtype);
}

const Kernel kKernels[] = {
    {"Dequantize", prepare_dequantize, run_dequantize},
    {"Quantize", prepare_quantize, run_quantize},
};

}  // namespace

extern const KernelTable kNpuConvertKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace npu
}  // namespace qnnb
