// Input lists, raw files and Result_N outputs: the formats of netrun.py, byte for byte.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runner.h"

namespace fs = std::filesystem;

namespace runner {

int64_t IOInfo::elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

static size_t dtype_size(qnnb_dtype t) {
    switch (t) {
        case QNNB_FLOAT32: case QNNB_INT32: return 4;
        case QNNB_INT64: return 8;
        case QNNB_FLOAT16: case QNNB_INT16: case QNNB_UINT16: return 2;
        default: return 1;
    }
}

size_t IOInfo::bytes() const { return static_cast<size_t>(elements()) * dtype_size(dtype); }

static std::string shape_text(const IOInfo& info) {
    std::string s = "[";
    for (size_t i = 0; i < info.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(info.shape[i]);
    return s + "]";
}

// As qnn-net-run: relative to the working directory; failing that, to the list's directory.
static std::string resolve(const std::string& file, const std::string& list_path) {
    const fs::path p(file);
    std::error_code ec;
    if (p.is_absolute() || fs::exists(p, ec)) return file;
    return (fs::path(list_path).parent_path() / p).string();
}

std::vector<Run> parse_input_list(const std::string& path, const std::vector<IOInfo>& inputs) {
    std::ifstream in(path);
    if (!in) throw Error(path + ": input list not found");
    std::string names;
    for (const IOInfo& i : inputs) names += (names.empty() ? "" : ", ") + i.name;
    std::vector<Run> runs;
    std::string line;
    for (int lineno = 1; std::getline(in, line); ++lineno) {
        std::istringstream tokens(line);
        std::string token, where = path + ":" + std::to_string(lineno);
        if (!(tokens >> token) || token[0] == '#') continue;
        Run run(inputs.size());
        do {
            std::string name, file;
            const size_t sep = token.find(":=");
            if (sep != std::string::npos) {
                name = token.substr(0, sep);
                file = token.substr(sep + 2);
            } else if (inputs.size() == 1) {
                name = inputs[0].name;
                file = token;
            } else {
                throw Error(where + ": '" + token + "' has no 'name:=' but the model has " +
                            std::to_string(inputs.size()) + " inputs (" + names + ")");
            }
            size_t k = 0;
            while (k < inputs.size() && inputs[k].name != name) ++k;
            if (k == inputs.size())
                throw Error(where + ": '" + name + "' is not an input of the model (inputs: " + names + ")");
            run[k] = resolve(file, path);
        } while (tokens >> token);
        for (size_t k = 0; k < inputs.size(); ++k)
            if (run[k].empty()) throw Error(where + ": missing input '" + inputs[k].name + "'");
        runs.push_back(run);
    }
    if (runs.empty()) throw Error(path + ": the input list has no inferences");
    return runs;
}

std::vector<unsigned char> read_raw(const std::string& path, const IOInfo& info, const std::string& where) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(where + ": raw file " + path + " not found (input '" + info.name + "')");
    std::vector<unsigned char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (data.size() != info.bytes())
        throw Error(where + ": " + path + " has " + std::to_string(data.size()) + " bytes; input '" + info.name +
                    "' needs " + std::to_string(info.bytes()) + " (" + shape_text(info) + ")");
    return data;
}

static float half_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1F, man = h & 0x3FF, bits;
    if (exp == 0x1F) {
        bits = sign | 0x7F800000u | (man << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else {  // subnormal half: normalize
        int e = -1;
        do {
            man <<= 1;
            ++e;
        } while (!(man & 0x400));
        bits = sign | ((112 - e) << 23) | ((man & 0x3FF) << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

template <class T>
static void convert(const void* data, int64_t n, float* out) {
    const T* x = static_cast<const T*>(data);
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(x[i]);
}

std::vector<unsigned char> read_raw_channel_last(const std::string& path, const IOInfo& info, const std::string& where) {
    if (info.shape.size() < 3) return read_raw(path, info, where);
    IOInfo last = info;  // [N, spatial..., C]
    last.shape.erase(last.shape.begin() + 1);
    last.shape.push_back(info.shape[1]);
    const std::vector<unsigned char> src = read_raw(path, last, where);
    std::vector<unsigned char> dst(src.size());
    const size_t es = info.bytes() / static_cast<size_t>(std::max<int64_t>(info.elements(), 1));
    const int64_t n = info.shape[0], c = info.shape[1], plane = info.elements() / std::max<int64_t>(n * c, 1);
    for (int64_t b = 0; b < n; ++b)
        for (int64_t p = 0; p < plane; ++p)
            for (int64_t ch = 0; ch < c; ++ch)
                std::memcpy(&dst[static_cast<size_t>(((b * c + ch) * plane + p)) * es],
                            &src[static_cast<size_t>(((b * plane + p) * c + ch)) * es], es);
    return dst;
}

std::vector<unsigned char> to_float32(const void* data, const IOInfo& info) {
    const int64_t n = info.elements();
    std::vector<float> out(static_cast<size_t>(n));
    switch (info.dtype) {
        case QNNB_FLOAT32: std::memcpy(out.data(), data, static_cast<size_t>(n) * 4); break;
        case QNNB_FLOAT16:
            for (int64_t i = 0; i < n; ++i) out[i] = half_to_float(static_cast<const uint16_t*>(data)[i]);
            break;
        case QNNB_UINT8: case QNNB_BOOL: convert<uint8_t>(data, n, out.data()); break;
        case QNNB_INT8: convert<int8_t>(data, n, out.data()); break;
        case QNNB_UINT16: convert<uint16_t>(data, n, out.data()); break;
        case QNNB_INT16: convert<int16_t>(data, n, out.data()); break;
        case QNNB_INT32: convert<int32_t>(data, n, out.data()); break;
        case QNNB_INT64: convert<int64_t>(data, n, out.data()); break;
        default:
            throw Error("output '" + info.name + "': dtype " + std::to_string(info.dtype) + " has no float32 form");
    }
    // Every target we build for is little-endian: the floats' bytes are the file's.
    std::vector<unsigned char> bytes(out.size() * 4);
    std::memcpy(bytes.data(), out.data(), bytes.size());
    return bytes;
}

std::string safe_name(const std::string& name) {
    std::string out;
    for (size_t i = 0; i < name.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(name[i]);
        if (c >= 0x80) {  // one `_` per UTF-8 character, as Python's per-character regex
            while (i + 1 < name.size() && (static_cast<unsigned char>(name[i + 1]) & 0xC0) == 0x80) ++i;
            out += '_';
        } else {
            const bool keep = std::isalnum(c) || c == '_' || c == '.' || c == '-';
            out += keep ? static_cast<char>(c) : '_';
        }
    }
    return out;
}

void clear_previous_run(const std::string& out_dir) {
    std::error_code ec;
    const fs::path dir(out_dir);
    if (!fs::exists(dir, ec)) return;
    if (!fs::is_directory(dir, ec)) throw Error(out_dir + ": is a file, the output folder is needed there");
    std::vector<fs::path> ours;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        bool is_ours = name == "profile.json" && entry.is_regular_file(ec);
        if (!is_ours && entry.is_directory(ec) && name.rfind("Result_", 0) == 0 && name.size() > 7 &&
            name.find_first_not_of("0123456789", 7) == std::string::npos) {
            is_ours = true;
            for (const auto& f : fs::directory_iterator(entry.path(), ec))
                is_ours = is_ours && f.is_regular_file(ec) && f.path().extension() == ".raw";
        }
        if (!is_ours)
            throw Error(out_dir + ": the output folder holds " + name + ", which net-run did not write; give an "
                        "empty or new folder (or one net-run wrote before, which it clears)");
        ours.push_back(entry.path());
    }
    if (ec) throw Error(out_dir + ": cannot read the output folder (" + ec.message() + ")");
    for (const auto& p : ours) fs::remove_all(p, ec);
}

void write_file(const std::string& path, const void* data, size_t size) {
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size)))
        throw Error(path + ": cannot write");
}

}  // namespace runner
