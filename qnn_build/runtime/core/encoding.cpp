// Encoding checks, apart from the conversions in quant.cpp: the context reader needs only these
// (and is built alone, with sanitizers, by the tests).
#include "quant.h"

namespace qnnb {

bool check_encoding(const Tensor& t, std::string& err) {
    const Encoding& e = t.encoding;
    if (e.kind == QNNB_ENCODING_FP16) return true;
    if (e.bitwidth < 2 || e.bitwidth > 32) {
        err = "bitwidth " + std::to_string(e.bitwidth) + " is not supported";
        return false;
    }
    int64_t expected = 1;
    if (e.axis >= 0) {
        if (e.axis >= t.rank()) {
            err = "encoding axis out of range";
            return false;
        }
        expected = t.dim(e.axis);
    }
    if (e.block_axis >= 0) {
        if (e.block_axis >= t.rank() || e.block_size <= 0 || t.dim(e.block_axis) % e.block_size != 0) {
            err = "block size does not divide the blocked dimension";
            return false;
        }
        // dims come from files: a product that overflows is refused, not computed
        if (__builtin_mul_overflow(expected, t.dim(e.block_axis) / e.block_size, &expected)) {
            err = "encoding has too many blocks";
            return false;
        }
    }
    if (static_cast<int64_t>(e.scales.size()) != expected || e.offsets.size() != e.scales.size()) {
        err = "encoding has " + std::to_string(e.scales.size()) + " scales; expected " + std::to_string(expected);
        return false;
    }
    return true;
}

}  // namespace qnnb
