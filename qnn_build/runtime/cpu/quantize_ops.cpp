// Quantize / Dequantize: the boundaries `convert --float-fallback` inserts between integer and fp16
// activations (docs/npu.md (N40)-(N42)). On the cpu backend every activation is float32 and the
// runtime already rounds each node's output through its encoding, so both kernels only copy:
// Quantize's output is then fake-quantized by (2),(1), Dequantize's rounded to half by (9).
#include <cstring>

#include "../core/graph.h"

namespace qnnb {
namespace {

bool prepare_boundary(Node& n, std::string& err) {
    const Tensor* x = n.input(0);
    const Tensor* y = n.output(0);
    if (!x || !y || x->dtype != QNNB_FLOAT32 || y->dtype != QNNB_FLOAT32) {
        err = "input and output must be float32 activations on this backend";
        return false;
    }
    if (x->numel() != y->numel()) {
        err = "input and output sizes differ";
        return false;
    }
    return true;
}

void run_boundary(Node& n, const ExecContext&) {
    std::memcpy(n.out[0]->data, n.in[0]->read_ptr(), n.out[0]->nbytes());
}

const Kernel kKernels[] = {
    {"Quantize", prepare_boundary, run_boundary},
    {"Dequantize", prepare_boundary, run_boundary},
};

}  // namespace

extern const KernelTable kCpuQuantizeKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace qnnb
