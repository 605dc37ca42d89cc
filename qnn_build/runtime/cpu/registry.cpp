// The cpu backend's op table: one kernel table per op family, listed here explicitly.
#include <string>
#include <unordered_map>

#include "../core/graph.h"

namespace qnnb {

extern const KernelTable kCpuElementwiseKernels;
extern const KernelTable kCpuActivationKernels;
extern const KernelTable kCpuConvKernels;
extern const KernelTable kCpuMatmulKernels;
extern const KernelTable kCpuPoolKernels;
extern const KernelTable kCpuReduceKernels;
extern const KernelTable kCpuNormKernels;
extern const KernelTable kCpuMovementKernels;
extern const KernelTable kCpuResizeKernels;
extern const KernelTable kCpuRnnKernels;
extern const KernelTable kCpuQuantizeKernels;
extern const KernelTable kCpuMathKernels;
extern const KernelTable kCpuLogicKernels;
extern const KernelTable kCpuGatherScatterKernels;
extern const KernelTable kCpuTopKKernels;
extern const KernelTable kCpuIndexMiscKernels;

static const KernelTable* const kCpuFamilies[] = {
    &kCpuElementwiseKernels,
    &kCpuActivationKernels,
    &kCpuConvKernels,
    &kCpuMatmulKernels,
    &kCpuPoolKernels,
    &kCpuReduceKernels,
    &kCpuNormKernels,
    &kCpuMovementKernels,
    &kCpuResizeKernels,
    &kCpuRnnKernels,
    &kCpuQuantizeKernels,
    &kCpuMathKernels,
    &kCpuLogicKernels,
    &kCpuGatherScatterKernels,
    &kCpuTopKKernels,
    &kCpuIndexMiscKernels,
};

const Kernel* cpu_find_kernel(const std::string& op) {
    static const auto* index = [] {
        auto* m = new std::unordered_map<std::string, const Kernel*>();
        for (const KernelTable* family : kCpuFamilies)
            for (size_t i = 0; i < family->count; ++i) (*m)[family->kernels[i].op] = &family->kernels[i];
        return m;
    }();
    auto it = index->find(op);
    return it == index->end() ? nullptr : it->second;
}

}  // namespace qnnb
