// Data movement family: plain copies (Identity, Reshape — Flatten/Squeeze/Unsqueeze lower to it),
// Concat, Split and Gather here; the strided copies, Pad and Cast in their own sources. This file
// holds the family's kernel table.
#include <algorithm>
#include <cstring>

#include "../core/parallel.h"
#include "movement.h"

namespace qnnb {
namespace movement {
namespace {

constexpr int64_t kCopyChunkBytes = 1 << 18;

// Identity and Reshape: the output shape is already known, so both copy the bytes.
bool prepare_copy(Node& n, std::string& err) {
    if (!require_same_dtype(n, err)) return false;
    if (n.in[0]->numel() != n.out[0]->numel()) {
        err = "input and output sizes differ";
        return false;
    }
    return true;
}

void parallel_memcpy(void* dst, const void* src, int64_t bytes, const ExecContext& ctx) {
    const int64_t chunks = (bytes + kCopyChunkBytes - 1) / kCopyChunkBytes;
    parallel_for(ctx, chunks, [&](int64_t c) {
        const int64_t begin = c * kCopyChunkBytes, len = std::min(kCopyChunkBytes, bytes - begin);
        std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, static_cast<size_t>(len));
    });
}

void run_copy(Node& n, const ExecContext& ctx) {
    parallel_memcpy(n.out[0]->data, n.in[0]->read_ptr(), static_cast<int64_t>(n.out[0]->nbytes()), ctx);
}

// Concat and Split move rows: for each index of the dims before `axis`, one contiguous piece per part.
struct RowPieces {
    int64_t rows = 1;                 // product of the dims before the axis
    std::vector<int64_t> piece_bytes; // per part: its dim at the axis times the dims after, in bytes
    std::vector<int64_t> piece_offset;// per part: where its piece starts in the whole row
    int64_t row_bytes = 0;
};

// `sizes`: each part's length along the axis (Split's "split", which also covers absent outputs);
// empty: the parts' own dims.
bool plan_pieces(const Tensor& whole, const std::vector<Tensor*>& parts, int64_t axis,
                 const std::vector<int64_t>& sizes, RowPieces& p, std::string& err) {
    const int r = whole.rank();
    if (axis < 0 || axis >= r || (!sizes.empty() && sizes.size() != parts.size())) {
        err = "axis out of range, or split sizes for another number of parts";
        return false;
    }
    const int a = static_cast<int>(axis);
    int64_t inner = static_cast<int64_t>(dtype_size(whole.dtype));
    for (int d = a + 1; d < r; ++d) inner *= whole.dim(d);
    for (int d = 0; d < a; ++d) p.rows *= whole.dim(d);
    int64_t along = 0;
    for (size_t k = 0; k < parts.size(); ++k) {
        const Tensor* t = parts[k];
        const int64_t len = sizes.empty() ? (t ? t->dim(a) : 0) : sizes[k];
        if (t && (t->rank() != r || t->dtype != whole.dtype || t->dim(a) != len)) {
            err = std::string("tensor '") + t->name + "' does not match the op's rank, dtype or sizes";
            return false;
        }
        p.piece_offset.push_back(along * inner);
        p.piece_bytes.push_back(len * inner);
        along += len;
    }
    p.row_bytes = along * inner;
    if (along != whole.dim(a)) {
        err = "the parts do not add up along the axis";
        return false;
    }
    return true;
}

// Work items are blocks of rows, or (when there are few rows) single rows of one part.
template <class CopyFn>
void for_each_piece(const RowPieces& p, const ExecContext& ctx, CopyFn copy) {
    const int64_t parts = static_cast<int64_t>(p.piece_bytes.size());
    if (p.rows < 4 * ctx.threads) {
        parallel_for(ctx, p.rows * parts, [&](int64_t item) { copy(item / parts, item % parts); });
        return;
    }
    const int64_t per_item = std::max<int64_t>(1, kCopyChunkBytes / std::max<int64_t>(p.row_bytes, 1));
    parallel_for(ctx, (p.rows + per_item - 1) / per_item, [&](int64_t item) {
        const int64_t end = std::min(p.rows, (item + 1) * per_item);
        for (int64_t row = item * per_item; row < end; ++row)
            for (int64_t k = 0; k < parts; ++k) copy(row, k);
    });
}

bool prepare_concat(Node& n, std::string& err) {
    return plan_pieces(*n.out[0], n.in, n.params.i("axis", 0), {}, n.make_state<RowPieces>(), err);
}

void run_concat(Node& n, const ExecContext& ctx) {
    const RowPieces& p = n.state_as<RowPieces>();
    char* y = static_cast<char*>(n.out[0]->data);
    for_each_piece(p, ctx, [&](int64_t row, int64_t k) {
        const int64_t len = p.piece_bytes[static_cast<size_t>(k)];
        if (len == 0) return;
        const char* x = static_cast<const char*>(n.in[static_cast<size_t>(k)]->read_ptr());
        std::memcpy(y + row * p.row_bytes + p.piece_offset[static_cast<size_t>(k)], x + row * len,
                    static_cast<size_t>(len));
    });
}

bool prepare_split(Node& n, std::string& err) {
    return plan_pieces(*n.in[0], n.out, n.params.i("axis", 0), n.params.ints("split"), n.make_state<RowPieces>(),
                       err);
}

void run_split(Node& n, const ExecContext& ctx) {
    const RowPieces& p = n.state_as<RowPieces>();
    const char* x = static_cast<const char*>(n.in[0]->read_ptr());
    for_each_piece(p, ctx, [&](int64_t row, int64_t k) {
        const int64_t len = p.piece_bytes[static_cast<size_t>(k)];
        if (len == 0 || !n.out[static_cast<size_t>(k)]) return;
        std::memcpy(static_cast<char*>(n.out[static_cast<size_t>(k)]->data) + row * len,
                    x + row * p.row_bytes + p.piece_offset[static_cast<size_t>(k)], static_cast<size_t>(len));
    });
}

// Gather: data viewed as [outer, n, inner], out as [outer, k, inner] for k indices.
struct GatherState {
    int64_t outer = 1, n = 1, inner = 1, k = 0;
    std::vector<int64_t> indices;  // normalised to [0, n); filled at prepare for constant indices
    bool const_indices = false;
};

// Negative indices count from the end; out-of-range ones (invalid ONNX) are clamped, never read out of bounds.
template <class I>
void normalise_indices(const I* idx, int64_t k, int64_t n, int64_t* out) {
    for (int64_t i = 0; i < k; ++i) {
        int64_t v = static_cast<int64_t>(idx[i]);
        if (v < 0) v += n;
        out[i] = std::min(std::max<int64_t>(v, 0), n - 1);
    }
}

void read_indices(const Tensor& t, GatherState& s) {
    s.indices.resize(static_cast<size_t>(s.k));
    if (t.dtype == QNNB_INT64)
        normalise_indices(t.in<int64_t>(), s.k, s.n, s.indices.data());
    else
        normalise_indices(t.in<int32_t>(), s.k, s.n, s.indices.data());
}

bool prepare_gather(Node& n, std::string& err) {
    if (!require_same_dtype(n, err)) return false;
    const Tensor& x = *n.in[0];
    const Tensor& idx = *n.in[1];
    if (idx.dtype != QNNB_INT64 && idx.dtype != QNNB_INT32) {
        err = "indices must be int64 or int32";
        return false;
    }
    const int64_t axis = n.params.i("axis", 0);
    if (axis < 0 || axis >= x.rank()) {
        err = "axis out of range";
        return false;
    }
    auto& s = n.make_state<GatherState>();
    for (int d = 0; d < axis; ++d) s.outer *= x.dim(d);
    s.n = x.dim(static_cast<int>(axis));
    for (int d = static_cast<int>(axis) + 1; d < x.rank(); ++d) s.inner *= x.dim(d);
    s.k = idx.numel();
    if (s.outer * s.k * s.inner != n.out[0]->numel()) {
        err = "output size does not match data and indices";
        return false;
    }
    if (s.n == 0 && s.k > 0 && s.outer * s.inner > 0) {
        err = "gather from an empty axis";
        return false;
    }
    s.const_indices = idx.is_const();
    if (s.const_indices) read_indices(idx, s);
    return true;
}

template <class T>
void gather_rows(const GatherState& s, const T* x, T* y, const ExecContext& ctx) {
    const int64_t items = s.outer * s.k, inner = s.inner;
    const int64_t per_item = std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1));
    parallel_for(ctx, (items + per_item - 1) / per_item, [&](int64_t c) {
        const int64_t end = std::min(items, (c + 1) * per_item);
        for (int64_t it = c * per_item; it < end; ++it) {
            const int64_t o = it / s.k, j = it % s.k;
            const T* src = x + (o * s.n + s.indices[static_cast<size_t>(j)]) * inner;
            T* dst = y + it * inner;
            if (inner == 1)
                dst[0] = src[0];
            else
                std::memcpy(dst, src, static_cast<size_t>(inner) * sizeof(T));
        }
    });
}

void run_gather(Node& n, const ExecContext& ctx) {
    GatherState& s = n.state_as<GatherState>();
    if (s.outer * s.k * s.inner == 0) return;
    if (!s.const_indices) read_indices(*n.in[1], s);
    with_element_type(dtype_size(n.in[0]->dtype), [&](auto zero) {
        using T = decltype(zero);
        gather_rows(s, n.in[0]->in<T>(), n.out[0]->out<T>(), ctx);
    });
}

const Kernel kKernels[] = {
    {"Identity", prepare_copy, run_copy},
    {"Reshape", prepare_copy, run_copy},
    {"Concat", prepare_concat, run_concat},
    {"Split", prepare_split, run_split},
    {"Gather", prepare_gather, run_gather},
    {"Transpose", prepare_transpose, run_strided},
    {"Slice", prepare_slice, run_strided},
    {"Expand", prepare_expand, run_strided},
    {"Tile", prepare_tile, run_strided},
    {"Pad", prepare_pad, run_pad},
    {"Cast", prepare_cast, run_cast},
};

}  // namespace
}  // namespace movement

extern const KernelTable kCpuMovementKernels = {movement::kKernels,
                                                sizeof(movement::kKernels) / sizeof(movement::kKernels[0])};

}  // namespace qnnb
