// Copies from an affine view of the input (see StridedCopy in movement.h), and the ops that are one:
// Transpose (also DepthToSpace/SpaceToDepth, as a transpose of a reshaped view), Slice, Expand, Tile.
#include <algorithm>
#include <cstring>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "../core/parallel.h"
#include "movement.h"

namespace qnnb {
namespace movement {
namespace {

constexpr int kMaxDims = 2 * QNNB_MAX_RANK;  // Tile views each dim as (repeat, dim)
constexpr int64_t kChunkElems = 16384;       // elements per parallel work item (row path)
constexpr int64_t kTile = 32;                // block edge of the blocked transpose

// The three row kinds (restrict: rows never overlap, so the loops vectorise). Short rows are copied
// inline: a memcpy call costs more than the copy.
template <class T>
inline void copy_run(T* __restrict__ out, const T* __restrict__ in, int64_t n) {
    if (n * static_cast<int64_t>(sizeof(T)) > 512) {
        std::memcpy(out, in, static_cast<size_t>(n) * sizeof(T));
        return;
    }
    for (int64_t i = 0; i < n; ++i) out[i] = in[i];
}

template <class T>
inline void fill_run(T* __restrict__ out, T v, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = v;
}

template <class T>
inline void gather_run(T* __restrict__ out, const T* __restrict__ in, int64_t step, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = in[i * step];
}

// Rows of the innermost dim, each a contiguous copy, a broadcast fill or a strided gather.
template <class T>
void copy_rows(const StridedCopy& p, const T* src, T* dst, const ExecContext& ctx) {
    const int r = static_cast<int>(p.dims.size());
    const int64_t inner = p.dims[r - 1], step = p.strides[r - 1];
    const int64_t rows = p.total / inner;
    const int64_t per_item = std::max<int64_t>(1, kChunkElems / inner);
    const int64_t items = (rows + per_item - 1) / per_item;
    parallel_for(ctx, items, [&](int64_t item) {
        const int64_t row0 = item * per_item, row1 = std::min(rows, row0 + per_item);
        int64_t idx[kMaxDims];
        int64_t off = p.base, rem = row0;
        for (int d = r - 2; d >= 0; --d) {
            idx[d] = rem % p.dims[d];
            rem /= p.dims[d];
            off += idx[d] * p.strides[d];
        }
        T* out = dst + row0 * inner;
        for (int64_t row = row0; row < row1; ++row, out += inner) {
            const T* in = src + off;
            if (step == 1)
                copy_run(out, in, inner);
            else if (step == 0)
                fill_run(out, in[0], inner);
            else
                gather_run(out, in, step, inner);
            for (int d = r - 2; d >= 0; --d) {  // next row: odometer over the outer dims
                off += p.strides[d];
                if (++idx[d] < p.dims[d]) break;
                off -= p.strides[d] * p.dims[d];
                idx[d] = 0;
            }
        }
    });
}

#if defined(__AVX2__)
// out[i][j] = in[j][i] for an 8x8 block of 4-byte elements (moved as floats: bits are kept).
inline void transpose8x8(const uint32_t* in, int64_t in_stride, uint32_t* out, int64_t out_stride) {
    const float* s = reinterpret_cast<const float*>(in);
    float* d = reinterpret_cast<float*>(out);
    __m256 r[8], t[8];
    for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(s + k * in_stride);
    for (int k = 0; k < 8; k += 2) {
        t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
        t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
    }
    for (int k = 0; k < 8; k += 4) {
        r[k] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int k = 0; k < 4; ++k) {
        _mm256_storeu_ps(d + k * out_stride, _mm256_permute2f128_ps(r[k], r[k + 4], 0x20));
        _mm256_storeu_ps(d + (k + 4) * out_stride, _mm256_permute2f128_ps(r[k], r[k + 4], 0x31));
    }
}
#endif

// One tile: out[i * osi + j] = in[i + j * sj] for i in [i0, i1), j in [j0, j1).
template <class T>
inline void transpose_tile(const T* in, int64_t sj, T* out, int64_t osi, int64_t i0, int64_t i1, int64_t j0,
                           int64_t j1) {
    int64_t i = i0;
#if defined(__AVX2__)
    if constexpr (sizeof(T) == 4) {
        for (; i + 8 <= i1; i += 8) {
            int64_t j = j0;
            for (; j + 8 <= j1; j += 8) transpose8x8(in + i + j * sj, sj, out + i * osi + j, osi);
            for (int64_t ii = i; ii < i + 8; ++ii)
                for (int64_t jj = j; jj < j1; ++jj) out[ii * osi + jj] = in[ii + jj * sj];
        }
    }
#endif
    for (; i < i1; ++i) {
        T* o = out + i * osi;
        const T* s = in + i;
        for (int64_t j = j0; j < j1; ++j) o[j] = s[j * sj];
    }
}

// The innermost output dim is strided in the input while dim `unit_dim` is contiguous there: copy
// kTile x kTile blocks so both reads and writes stay in cache lines already loaded.
template <class T>
void copy_blocked(const StridedCopy& p, const T* src, T* dst, const ExecContext& ctx) {
    const int r = static_cast<int>(p.dims.size()), q = p.unit_dim;
    std::vector<int64_t> out_strides = contiguous_strides(p.dims);
    const int64_t nj = p.dims[r - 1], sj = p.strides[r - 1];
    const int64_t ni = p.dims[q], osi = out_strides[q];
    const int64_t outer = p.total / (ni * nj);
    const int64_t iblocks = (ni + kTile - 1) / kTile;
    parallel_for(ctx, outer * iblocks, [&](int64_t item) {
        int64_t rem = item / iblocks;
        const int64_t i0 = (item % iblocks) * kTile, i1 = std::min(ni, i0 + kTile);
        int64_t in_off = p.base, out_off = 0;
        for (int d = r - 2; d >= 0; --d) {
            if (d == q) continue;
            const int64_t k = rem % p.dims[d];
            rem /= p.dims[d];
            in_off += k * p.strides[d];
            out_off += k * out_strides[d];
        }
        for (int64_t j0 = 0; j0 < nj; j0 += kTile)
            transpose_tile(src + in_off, sj, dst + out_off, osi, i0, i1, j0, std::min(nj, j0 + kTile));
    });
}

bool plan_or_fail(Node& n, std::vector<int64_t> dims, std::vector<int64_t> strides, int64_t base,
                  std::string& err) {
    if (dims.size() > static_cast<size_t>(kMaxDims)) {
        err = "too many dims";
        return false;
    }
    plan_strided_copy(n.make_state<StridedCopy>(), dtype_size(n.in[0]->dtype), std::move(dims),
                      std::move(strides), base);
    if (n.state_as<StridedCopy>().total != n.out[0]->numel()) {
        err = "output size does not match the op's parameters";
        return false;
    }
    return true;
}

}  // namespace

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
    std::vector<int64_t> st(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;) st[d - 1] = st[d] * shape[d];
    return st;
}

bool require_same_dtype(const Node& n, std::string& err) {
    const qnnb_dtype dt = n.in[0]->dtype;
    if (dtype_size(dt) == 0 || dt == QNNB_INT4) {  // packed int4 has no whole-byte elements to move
        err = std::string("dtype ") + dtype_name(dt) + " is not supported";
        return false;
    }
    for (const Tensor* t : n.out)
        if (t && t->dtype != dt) {
            err = std::string("tensor '") + t->name + "' has dtype " + dtype_name(t->dtype) + "; expected " +
                  dtype_name(dt);
            return false;
        }
    return true;
}

void plan_strided_copy(StridedCopy& p, size_t esize, std::vector<int64_t> dims, std::vector<int64_t> strides,
                       int64_t base) {
    p.esize = esize;
    p.base = base;
    p.unit_dim = -1;
    p.dims.clear();
    p.strides.clear();
    p.total = 1;
    for (int64_t d : dims) p.total *= d;
    if (p.total == 0) return;
    for (size_t d = 0; d < dims.size(); ++d) {
        if (dims[d] == 1) continue;
        if (!p.dims.empty() && p.strides.back() == dims[d] * strides[d]) {
            p.dims.back() *= dims[d];  // stepping the outer dim once == stepping this one dims[d] times
            p.strides.back() = strides[d];
        } else {
            p.dims.push_back(dims[d]);
            p.strides.push_back(strides[d]);
        }
    }
    if (p.dims.empty()) {
        p.dims = {1};
        p.strides = {1};
    }
    const int r = static_cast<int>(p.dims.size());
    const int64_t last_stride = p.strides[r - 1];
    if (last_stride != 1 && last_stride != 0 && p.dims[r - 1] >= 2)
        for (int d = r - 2; d >= 0; --d)
            if (p.strides[d] == 1 && p.dims[d] >= 4) {
                p.unit_dim = d;
                break;
            }
}

void run_strided_copy(const StridedCopy& p, const void* src, void* dst, const ExecContext& ctx) {
    if (p.total == 0) return;
    with_element_type(p.esize, [&](auto zero) {
        using T = decltype(zero);
        if (p.unit_dim >= 0)
            copy_blocked(p, static_cast<const T*>(src), static_cast<T*>(dst), ctx);
        else
            copy_rows(p, static_cast<const T*>(src), static_cast<T*>(dst), ctx);
    });
}

// Transpose: perm over the input, or over `in_shape` (a reshaped view of it) when given.
bool prepare_transpose(Node& n, std::string& err) {
    if (!require_same_dtype(n, err)) return false;
    const Tensor& x = *n.in[0];
    const std::vector<int64_t> shape = n.params.has("in_shape") ? n.params.ints("in_shape") : x.shape;
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    if (numel != x.numel()) {
        err = "in_shape does not match the input's size";
        return false;
    }
    const int r = static_cast<int>(shape.size());
    std::vector<int64_t> perm = n.params.ints("perm");
    if (perm.empty())
        for (int d = r - 1; d >= 0; --d) perm.push_back(d);
    std::vector<bool> seen(static_cast<size_t>(r), false);
    if (static_cast<int>(perm.size()) != r) {
        err = "perm has the wrong length";
        return false;
    }
    for (int64_t p : perm) {
        if (p < 0 || p >= r || seen[static_cast<size_t>(p)]) {
            err = "perm is not a permutation";
            return false;
        }
        seen[static_cast<size_t>(p)] = true;
    }
    const std::vector<int64_t> st = contiguous_strides(shape);
    std::vector<int64_t> dims, strides;
    for (int64_t p : perm) {
        dims.push_back(shape[static_cast<size_t>(p)]);
        strides.push_back(st[static_cast<size_t>(p)]);
    }
    return plan_or_fail(n, dims, strides, 0, err);
}

// Slice: per-dim `starts` and `steps` (already clamped by the converter); sizes are the output's.
bool prepare_slice(Node& n, std::string& err) {
    if (!require_same_dtype(n, err)) return false;
    const Tensor& x = *n.in[0];
    const std::vector<int64_t>& out = n.out[0]->shape;
    const std::vector<int64_t> starts = n.params.ints("starts"), steps = n.params.ints("steps");
    const size_t r = x.shape.size();
    if (starts.size() != r || steps.size() != r || out.size() != r) {
        err = "starts/steps must give one value per dim";
        return false;
    }
    const std::vector<int64_t> st = contiguous_strides(x.shape);
    std::vector<int64_t> strides(r);
    int64_t base = 0;
    for (size_t d = 0; d < r; ++d) {
        const int64_t last = starts[d] + (out[d] - 1) * steps[d];
        if (out[d] > 0 && (starts[d] < 0 || starts[d] >= x.shape[d] || last < 0 || last >= x.shape[d])) {
            err = "slice reads outside the input";
            return false;
        }
        base += (out[d] > 0 ? starts[d] : 0) * st[d];
        strides[d] = steps[d] * st[d];
    }
    return plan_or_fail(n, out, strides, base, err);
}

// Expand: numpy broadcast of the input to the output's shape (stride 0 along broadcast dims).
bool prepare_expand(Node& n, std::string& err) {
    if (!require_same_dtype(n, err)) return false;
    const Tensor& x = *n.in[0];
    const std::vector<int64_t>& out = n.out[0]->shape;
    if (x.shape.size() > out.size()) {
        err = "input rank exceeds output rank";
        return false;
    }
    const size_t lead = out.size() - x.shape.size();
    const std::vector<int64_t> st = contiguous_strides(x.shape);
    std::vector<int64_t> strides(out.size(), 0);
    for (size_t d = lead; d < out.size(); ++d) {
        const int64_t xd = x.shape[d - lead];
        if (xd == out[d]) {
            strides[d] = st[d - lead];
        } else if (xd != 1) {
            err = "input does not broadcast to the output shape";
            return false;
        }
    }
    return plan_or_fail(n, out, strides, 0, err);
}

// Tile: output dim d of size r*n is the view (r, n) with strides (0, stride_d).
bool prepare_tile(Node& n, std::string& err) {
    if (!require_same_dtype(n, err)) return false;
    const Tensor& x = *n.in[0];
    const std::vector<int64_t>& out = n.out[0]->shape;
    if (x.shape.size() != out.size()) {
        err = "input and output ranks differ";
        return false;
    }
    const std::vector<int64_t> st = contiguous_strides(x.shape);
    std::vector<int64_t> dims, strides;
    for (size_t d = 0; d < out.size(); ++d) {
        const int64_t xd = x.shape[d];
        const int64_t reps = xd ? out[d] / xd : 0;
        if (xd ? reps * xd != out[d] : out[d] != 0) {
            err = "output shape is not a tiling of the input";
            return false;
        }
        dims.insert(dims.end(), {reps, xd});
        strides.insert(strides.end(), {0, st[d]});
    }
    return plan_or_fail(n, dims, strides, 0, err);
}

void run_strided(Node& n, const ExecContext& ctx) {
    run_strided_copy(n.state_as<StridedCopy>(), n.in[0]->read_ptr(), n.out[0]->data, ctx);
}

}  // namespace movement
}  // namespace qnnb
