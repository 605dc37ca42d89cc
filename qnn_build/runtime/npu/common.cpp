#include "npu.h"

namespace qnnb {
namespace npu {

bool check_int_operand(const Tensor* t, std::string& err) {
    if (!t) {
        err = "missing operand";
        return false;
    }
    const bool int_type = t->dtype == QNNB_UINT8 || t->dtype == QNNB_UINT16 || t->dtype == QNNB_INT8 ||
                          t->dtype == QNNB_INT16 || t->dtype == QNNB_INT32;
    if (!int_type || !t->encoding.present() || t->encoding.kind != QNNB_ENCODING_INT) {
        err = "tensor '" + t->name + "' is not an integer tensor with an encoding (" + dtype_name(t->dtype) + ")";
        return false;
    }
    if (t->encoding.scales.size() != 1) {
        err = "tensor '" + t->name + "' must have a per-tensor encoding here";
        return false;
    }
    return true;
}

bool check_int_output(const Tensor* t, std::string& err) {
    if (!t || (t->dtype != QNNB_UINT8 && t->dtype != QNNB_UINT16) || !t->encoding.present()) {
        err = "output '" + (t ? t->name : std::string("?")) + "' must be an 8- or 16-bit integer activation";
        return false;
    }
    return true;
}

bool int_params(const Node& n, const char* name, size_t count, int32_t* out, std::string& err) {
    std::vector<int64_t> v = n.params.ints(name);
    if (v.size() != count) {
        err = std::string("parameter ") + name + " missing or of the wrong length (convert the model for the npu again)";
        return false;
    }
    for (size_t i = 0; i < count; ++i) out[i] = static_cast<int32_t>(v[i]);
    return true;
}

}  // namespace npu
}  // namespace qnnb
