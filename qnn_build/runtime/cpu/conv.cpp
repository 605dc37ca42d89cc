// conv family kernels (being written).
#include "../core/graph.h"

namespace qnnb {
extern const KernelTable kCpuConvKernels = {nullptr, 0};
}  // namespace qnnb
