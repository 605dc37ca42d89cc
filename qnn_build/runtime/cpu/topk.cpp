// TopK (float32, int32, int64): the k largest (or smallest) along an axis, sorted, with their int64
// indices. Ties keep the lower index first, as onnxruntime does; k comes from the converter (param k).
#include "../core/topk.h"

namespace qnnb {
namespace {

bool prepare_topk(Node& n, std::string& err) {
    const Tensor& x = *n.in[0];
    if (x.dtype != QNNB_FLOAT32 && x.dtype != QNNB_INT32 && x.dtype != QNNB_INT64) {
        err = std::string("dtype ") + dtype_name(x.dtype) + " is not supported";
        return false;
    }
    if (n.out.size() != 2 || (n.out[0] && n.out[0]->dtype != x.dtype) || (n.out[1] && n.out[1]->dtype != QNNB_INT64)) {
        err = "outputs must be the values (the input's dtype) and int64 indices";
        return false;
    }
    return read_topk(n, x, n.make_state<TopKShape>(), err);
}

template <class T>
void run_topk_as(Node& n, const ExecContext& ctx) {
    topk_rows(n.state_as<TopKShape>(), n.in[0]->in<T>(), n.out[0] ? n.out[0]->out<T>() : nullptr,
              n.out[1] ? n.out[1]->out<int64_t>() : nullptr, ctx);
}

void run_topk(Node& n, const ExecContext& ctx) {
    switch (n.in[0]->dtype) {
        case QNNB_INT32: run_topk_as<int32_t>(n, ctx); break;
        case QNNB_INT64: run_topk_as<int64_t>(n, ctx); break;
        default: run_topk_as<float>(n, ctx);
    }
}

const Kernel kKernels[] = {{"TopK", prepare_topk, run_topk}};

}  // namespace

extern const KernelTable kCpuTopKKernels = {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};

}  // namespace qnnb
