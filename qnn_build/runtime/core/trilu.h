// Trilu on any element type: the elements outside the kept triangle of the last two dims become
// `fill` (zero on the cpu; the zero point's code on the npu, docs/npu.md (N36)).
#pragma once

#include <algorithm>
#include <cstring>

#include "graph.h"
#include "parallel.h"

namespace qnnb {

// `fill`: one element of x's dtype; null for zero bytes.
inline void trilu_rows(const Tensor& x, Tensor& y, int64_t k, bool upper, const void* fill, const ExecContext& ctx) {
    const int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
    const int64_t mats = x.numel() / std::max<int64_t>(rows * cols, 1);
    const size_t es = dtype_size(x.dtype);
    const char* src = static_cast<const char*>(x.read_ptr());
    char* dst = static_cast<char*>(y.data);
    parallel_for(ctx, mats * rows, [&](int64_t r) {
        const int64_t i = r % rows;
        // kept: j - i >= k (upper) or j - i <= k (lower)
        const int64_t lo = upper ? std::min(std::max<int64_t>(i + k, 0), cols) : 0;
        const int64_t hi = upper ? cols : std::min(std::max<int64_t>(i + k + 1, 0), cols);
        char* row = dst + static_cast<size_t>(r * cols) * es;
        if (!fill) std::memset(row, 0, static_cast<size_t>(cols) * es);
        else
            for (int64_t j = 0; j < cols; ++j) std::memcpy(row + j * es, fill, es);
        if (hi > lo) std::memcpy(row + lo * es, src + static_cast<size_t>(r * cols + lo) * es, static_cast<size_t>(hi - lo) * es);
    });
}

}  // namespace qnnb
