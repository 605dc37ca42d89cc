// The backends this runtime was built with.
#include "graph.h"

namespace qnnb {

const Kernel* npu_find_kernel(const Node& node);

static const Kernel* cpu_kernel_for(const Node& node) { return cpu_find_kernel(node.op); }

static const Backend kBackends[] = {
    {"cpu", cpu_kernel_for, true},
    {"npu", npu_find_kernel, false},
};

const Backend* find_backend(const std::string& name) {
    for (const Backend& b : kBackends)
        if (name == b.name) return &b;
    return nullptr;
}

}  // namespace qnnb
