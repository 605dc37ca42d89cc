// Data movement kernels, shared between the movement family's sources. Every op here moves
// elements by size (1, 2, 4 or 8 bytes), so one kernel serves every dtype the runtime knows.
// The family's single kernel table lives in movement.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../core/graph.h"

namespace qnnb {
namespace movement {

// Calls `fn(T{})` with an unsigned integer type of `esize` bytes; false for other sizes.
template <class Fn>
bool with_element_type(size_t esize, Fn fn) {
    switch (esize) {
        case 1: fn(uint8_t{}); return true;
        case 2: fn(uint16_t{}); return true;
        case 4: fn(uint32_t{}); return true;
        case 8: fn(uint64_t{}); return true;
    }
    return false;
}

// A copy into a contiguous output from an affine view of the input:
//   out[i_0, ..., i_{r-1}] = in[base + sum_d i_d * strides[d]]   (strides in elements, may be 0 or < 0).
// Planned once: unit dims dropped and dims that stay contiguous merged, so the innermost loop is as
// long as possible. Transpose, Slice, Expand, Tile, DepthToSpace and SpaceToDepth are all this.
struct StridedCopy {
    size_t esize = 4;
    std::vector<int64_t> dims;
    std::vector<int64_t> strides;
    int64_t base = 0;
    int64_t total = 0;
    int unit_dim = -1;  // a dim with input stride 1 when the innermost is strided: blocked transpose
};

void plan_strided_copy(StridedCopy& plan, size_t esize, std::vector<int64_t> dims,
                       std::vector<int64_t> strides, int64_t base);
void run_strided_copy(const StridedCopy& plan, const void* src, void* dst, const ExecContext& ctx);

// Row-major element strides of `shape`.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);

// Fails unless every given tensor has the dtype of the first input.
bool require_same_dtype(const Node& n, std::string& err);

bool prepare_transpose(Node& n, std::string& err);
bool prepare_slice(Node& n, std::string& err);
bool prepare_expand(Node& n, std::string& err);
bool prepare_tile(Node& n, std::string& err);
void run_strided(Node& n, const ExecContext& ctx);  // Transpose, Slice, Expand, Tile

bool prepare_pad(Node& n, std::string& err);
void run_pad(Node& n, const ExecContext& ctx);

bool prepare_cast(Node& n, std::string& err);
void run_cast(Node& n, const ExecContext& ctx);

}  // namespace movement
}  // namespace qnnb
