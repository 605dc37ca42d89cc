// qnn-net-run: the native runner. It reads the same input lists and raw files as `qnn-build
// net-run` and writes the same Result_N/<output>.raw files (docs/formats.md), with the runtime
// linked in, so a device runs a model library with no Python (docs/targets.md).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "qnnb.h"

namespace runner {

// Every failure: one line for stderr, then exit status 1.
struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct IOInfo {
    std::string name;
    qnnb_dtype dtype;
    std::vector<int64_t> shape;
    int64_t elements() const;
    size_t bytes() const;
};

// One inference's input files, in the graph's input order.
using Run = std::vector<std::string>;

// The input list (one line per inference of `name:=path` entries, or a bare path for a
// single-input model; `#` comments), as netrun.parse_input_list.
std::vector<Run> parse_input_list(const std::string& path, const std::vector<IOInfo>& inputs);

// A raw file's bytes; its size must be exactly the input's.
std::vector<unsigned char> read_raw(const std::string& path, const IOInfo& info, const std::string& where);

// An input of rank >= 3 whose raw file is channel-last (NHWC, as QNN-converted models take them),
// transposed to the model's channel-first layout; lower ranks are read as they are.
std::vector<unsigned char> read_raw_channel_last(const std::string& path, const IOInfo& info, const std::string& where);

// An output as little-endian float32 bytes (every dtype converted as numpy's astype does).
std::vector<unsigned char> to_float32(const void* data, const IOInfo& info);

// Letters, digits, `_`, `.`, `-` kept; any other character (a whole UTF-8 sequence) becomes `_`.
std::string safe_name(const std::string& name);

void write_file(const std::string& path, const void* data, size_t size);
// A used output folder: what an earlier net-run wrote (Result_N of .raw files, profile.json) is
// removed; a folder holding anything else is refused (as `qnn-build net-run`, runtime/netrun.py).
void clear_previous_run(const std::string& out_dir);

// What profile.json records (profile.cpp; docs/formats.md).
struct ProfiledNode {
    std::string name, op, fused;
    std::vector<std::vector<int64_t>> outputs;  // shapes; empty for an absent output
    std::vector<double> time_us;                 // per inference
};
struct Profile {
    std::string backend, level;                              // level: basic or detailed
    std::vector<std::pair<std::string, double>> init_us;     // load/compose/finalize or retrieve
    std::vector<double> execute_us;                          // per inference
    std::vector<ProfiledNode> nodes;                         // detailed only
};
// The profile as `qnn-build net-run` writes it: the same keys, sorted, the same statistics.
std::string profile_json(const Profile& profile);

// The model library: opened, checked to be for this machine, its compose entry point found.
qnnb_compose_fn load_model_library(const std::string& path);

}  // namespace runner
