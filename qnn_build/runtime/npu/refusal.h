// What an npu kernel cannot honour stops finalize with one message (docs/npu.md (N34)).
#pragma once

#include <string>

#include "../core/graph.h"

namespace qnnb {
namespace npu {

// The message for what a kernel cannot honour.
inline std::string refusal(const Node& n, const std::string& what = "") {
    return "no npu kernel for " + n.op + (what.empty() ? std::string() : " with " + what) +
           "; convert with --float-fallback";
}

// The node's convert-time refusal (param npu_unsupported), if any.
inline bool refused(const Node& n, std::string& err) {
    if (!n.params.has("npu_unsupported")) return false;
    err = refusal(n, n.params.s("npu_unsupported"));
    return true;
}

// A kernel table entry that only refuses.
inline bool refuse(Node& n, std::string& err) {
    err = refusal(n);
    return false;
}
inline void run_nothing(Node&, const ExecContext&) {}

}  // namespace npu
}  // namespace qnnb
