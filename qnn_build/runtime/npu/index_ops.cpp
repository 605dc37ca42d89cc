// Index ops on integer codes: docs/npu.md (N36). Trilu keeps its input's encoding and fills the zero
// point's code (the code of 0, on every activation's grid); IsNaN of an encoded value is false.
#include <cstring>

#include "../core/trilu.h"
#include "npu.h"

namespace qnnb {
namespace npu {
namespace {

bool prepare_trilu(Node& n, std::string& err) {
    const Tensor *x = n.input(0), *y = n.output(0);
    if (!check_int_operand(x, err) || !check_int_output(y, err)) return false;
    if (x->rank() < 2 || y->shape != x->shape || !same_encoding(*x, *y)) {
        err = "Trilu takes a tensor of rank >= 2 to one of the same shape and encoding";
        return false;
    }
    return true;
}

void run_trilu(Node& n, const ExecContext& ctx) {
    const Tensor& x = *n.in[0];
    const int32_t zp = zero_point(x);
    uint8_t fill[2];
    const uint16_t zp16 = static_cast<uint16_t>(zp);
    if (x.dtype == QNNB_UINT8) fill[0] = static_cast<uint8_t>(zp);
    else std::memcpy(fill, &zp16, sizeof(zp16));
    trilu_rows(x, *n.out[0], n.params.i("k", 0), n.params.i("upper", 1) != 0, fill, ctx);
}

bool prepare_is_nan(Node& n, std::string& err) {
    const Tensor *x = n.input(0), *y = n.output(0);
    if (!check_int_operand(x, err)) return false;
    if (!y || y->dtype != QNNB_BOOL || y->numel() != x->numel()) {
        err = "IsNaN takes a tensor to a bool one of the same size";
        return false;
    }
    return true;
}

void run_is_nan(Node& n, const ExecContext&) {  // a code is never NaN
    std::memset(n.out[0]->data, 0, static_cast<size_t>(n.out[0]->numel()));
}

const Kernel kKernels[] = {
    {"Trilu", prepare_trilu, run_trilu},
    {"IsNaN", prepare_is_nan, run_is_nan},
};

}  // namespace

extern const KernelTable kNpuIndexKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace npu
}  // namespace qnnb
