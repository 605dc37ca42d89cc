// norm family kernels (being written).
#include "../core/graph.h"

namespace qnnb {
extern const KernelTable kCpuNormKernels = {nullptr, 0};
}  // namespace qnnb
