// movement family kernels (being written).
#include "../core/graph.h"

namespace qnnb {
extern const KernelTable kCpuMovementKernels = {nullptr, 0};
}  // namespace qnnb
