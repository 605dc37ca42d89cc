// pool family kernels (being written).
#include "../core/graph.h"

namespace qnnb {
extern const KernelTable kCpuPoolKernels = {nullptr, 0};
}  // namespace qnnb
