#include "graph.h"

namespace qnnb {

size_t dtype_size(qnnb_dtype dtype) {
    switch (dtype) {
        case QNNB_FLOAT32: case QNNB_INT32: return 4;
        case QNNB_UINT8: case QNNB_INT8: case QNNB_BOOL: return 1;
        case QNNB_UINT16: case QNNB_INT16: case QNNB_FLOAT16: return 2;
        case QNNB_INT64: return 8;
        case QNNB_INT4: return 1;  // packed: see Tensor::nbytes
    }
    return 0;
}

const char* dtype_name(qnnb_dtype dtype) {
    switch (dtype) {
        case QNNB_FLOAT32: return "float32";
        case QNNB_UINT8: return "uint8";
        case QNNB_INT8: return "int8";
        case QNNB_UINT16: return "uint16";
        case QNNB_INT16: return "int16";
        case QNNB_INT32: return "int32";
        case QNNB_INT64: return "int64";
        case QNNB_BOOL: return "bool";
        case QNNB_FLOAT16: return "float16";
        case QNNB_INT4: return "int4";
    }
    return "unknown";
}

int64_t Params::i(const std::string& name, int64_t def) const {
    auto it = map_.find(name);
    if (it == map_.end() || it->second.ints.empty()) return def;
    return it->second.ints[0];
}

float Params::f(const std::string& name, float def) const {
    auto it = map_.find(name);
    if (it == map_.end() || it->second.floats.empty()) return def;
    return it->second.floats[0];
}

std::vector<int64_t> Params::ints(const std::string& name, std::vector<int64_t> def) const {
    auto it = map_.find(name);
    return it == map_.end() ? def : it->second.ints;
}

std::vector<float> Params::floats(const std::string& name, std::vector<float> def) const {
    auto it = map_.find(name);
    return it == map_.end() ? def : it->second.floats;
}

std::string Params::s(const std::string& name, const std::string& def) const {
    auto it = map_.find(name);
    return it == map_.end() ? def : it->second.str;
}

}  // namespace qnnb
