// resize family kernels (being written).
#include "../core/graph.h"

namespace qnnb {
extern const KernelTable kCpuResizeKernels = {nullptr, 0};
}  // namespace qnnb
