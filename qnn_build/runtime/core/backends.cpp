// The backends this runtime was built with.
#include "graph.h"

namespace qnnb {

const Kernel* cpu_find_kernel(const std::string& op);

static const Backend kBackends[] = {
    {"cpu", cpu_find_kernel, true},
};

const Backend* find_backend(const std::string& name) {
    for (const Backend& b : kBackends)
        if (name == b.name) return &b;
    return nullptr;
}

}  // namespace qnnb
