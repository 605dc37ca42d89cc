// reduce family kernels (being written).
#include "../core/graph.h"

namespace qnnb {
extern const KernelTable kCpuReduceKernels = {nullptr, 0};
}  // namespace qnnb
