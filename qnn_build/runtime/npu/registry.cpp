// The npu backend's op table. A node whose output is an fp16 activation runs the cpu kernel (fp16
// storage semantics: docs/npu.md); every other node needs an integer kernel from these tables.
// Ops that only move bytes (their output shares the input's encoding) run the cpu kernels, which
// are written for any element type.
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "../core/graph.h"

namespace qnnb {
namespace npu {
extern const KernelTable kNpuElementwiseKernels;
extern const KernelTable kNpuLutKernels;
extern const KernelTable kNpuConvKernels;    // (N10)-(N15): Conv, ConvTranspose
extern const KernelTable kNpuMatmulKernels;  // (N13)-(N15): Gemm, MatMul
}  // namespace npu

static const KernelTable* const kNpuFamilies[] = {
    &npu::kNpuElementwiseKernels,
    &npu::kNpuLutKernels,
    &npu::kNpuConvKernels,
    &npu::kNpuMatmulKernels,
};

static const std::unordered_set<std::string> kByteMovers = {
    "Identity", "Reshape", "Transpose", "Slice", "Gather", "Split", "Expand", "Tile", "DepthToSpace",
    "SpaceToDepth",
};

const Kernel* npu_find_kernel(const Node& node) {
    static const auto* index = [] {
        auto* m = new std::unordered_map<std::string, const Kernel*>();
        for (const KernelTable* family : kNpuFamilies)
            for (size_t i = 0; i < family->count; ++i) (*m)[family->kernels[i].op] = &family->kernels[i];
        return m;
    }();
    const Tensor* out = node.output(0);
    const bool fp16_node = out && out->encoding.present() && out->encoding.kind == QNNB_ENCODING_FP16;
    const bool unencoded = out && !out->encoding.present();  // int64/bool results (indices, masks)
    if (fp16_node || unencoded || kByteMovers.count(node.op)) return cpu_find_kernel(node.op);
    auto it = index->find(node.op);
    return it == index->end() ? nullptr : it->second;
}

}  // namespace qnnb
