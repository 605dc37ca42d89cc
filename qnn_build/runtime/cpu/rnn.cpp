// rnn family kernels (being written).
#include "../core/graph.h"

namespace qnnb {
extern const KernelTable kCpuRnnKernels = {nullptr, 0};
}  // namespace qnnb
