// matmul family kernels (being written).
#include "../core/graph.h"

namespace qnnb {
extern const KernelTable kCpuMatmulKernels = {nullptr, 0};
}  // namespace qnnb
