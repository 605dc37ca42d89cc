import numpy as np
import pytest

from .opcase import OpCase, check_op

rng = np.random.default_rng(0)


def r(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def idx(hi, *shape, lo=None, dtype=np.int64):
    return rng.integers(-hi if lo is None else lo, hi, shape).astype(dtype)


CASES = [
    OpCase("GatherElements", {"x": r(3, 4)}, consts={"i": idx(3, 2, 4)}, attrs={"axis": 0}, id="gather_elements_axis0"),
    OpCase("GatherElements", {"x": r(2, 5, 3), "i": idx(5, 2, 4, 3, lo=0)}, attrs={"axis": -2},
           id="gather_elements_runtime_indices"),
    OpCase("GatherElements", {"x": rng.integers(0, 9, (4, 6))}, consts={"i": idx(6, 4, 2, dtype=np.int32)},
           attrs={"axis": 1}, id="gather_elements_int64_data"),
    OpCase("GatherND", {"x": r(4, 5, 6)}, consts={"i": idx(4, 3, 2, lo=0)}, id="gather_nd_slices"),
    OpCase("GatherND", {"x": r(4, 5, 6)}, consts={"i": idx(5, 4, 2, 1, lo=0)}, attrs={"batch_dims": 1},
           id="gather_nd_batch_dims"),
    OpCase("GatherND", {"x": r(3, 3)}, consts={"i": np.array([[0, 0], [2, -1]], np.int64)}, id="gather_nd_elements"),
    OpCase("ScatterElements", {"x": r(3, 5), "u": r(2, 5)}, consts={"i": idx(3, 2, 5, lo=0)},
           input_order=["x", "i", "u"], attrs={"axis": 0}, id="scatter_elements"),
    OpCase("ScatterElements", {"x": r(3, 5), "u": r(3, 2)}, consts={"i": np.array([[1, 1], [0, 4], [2, 2]])},
           input_order=["x", "i", "u"], attrs={"axis": 1, "reduction": "add"}, opset=18, id="scatter_elements_add"),
    OpCase("ScatterND", {"x": r(4, 5), "u": r(2, 5)}, consts={"i": np.array([[3], [1]])},
           input_order=["x", "i", "u"], id="scatter_nd_rows"),
    OpCase("ScatterND", {"x": r(4, 5), "u": r(3)}, consts={"i": np.array([[0, 1], [3, 4], [0, 1]])},
           input_order=["x", "i", "u"], attrs={"reduction": "mul"}, opset=18, id="scatter_nd_mul"),
    OpCase("TopK", {"x": r(3, 50)}, consts={"k": np.array([5])}, n_outputs=2, id="topk_largest"),
    OpCase("TopK", {"x": np.round(r(4, 9, 3), 0)}, consts={"k": np.array([4])}, attrs={"axis": 1, "largest": 0},
           n_outputs=2, id="topk_smallest_ties_axis1"),
    OpCase("TopK", {"x": rng.integers(0, 5, (2, 20))}, consts={"k": np.array([3])}, n_outputs=2, id="topk_int64"),
    OpCase("CumSum", {"x": r(3, 7)}, consts={"axis": np.array(1)}, id="cumsum"),
    OpCase("CumSum", {"x": r(4, 3)}, consts={"axis": np.array(0)}, attrs={"exclusive": 1, "reverse": 1},
           id="cumsum_exclusive_reverse"),
    OpCase("CumSum", {"x": rng.integers(-5, 5, (2, 6)).astype(np.int32)}, consts={"axis": np.array(-1, np.int32)},
           id="cumsum_int32"),
    OpCase("Trilu", {"x": r(2, 5, 7)}, id="triu"),
    OpCase("Trilu", {"x": r(6, 4)}, consts={"k": np.array(-1)}, attrs={"upper": 0}, id="tril_k_minus1"),
    OpCase("Trilu", {"x": np.ones((1, 1, 9, 9), np.bool_)}, consts={"k": np.array(1)}, id="triu_bool_mask"),
    OpCase("OneHot", {"i": idx(5, 2, 3)}, consts={"depth": np.array(5), "v": np.array([0.0, 2.0], np.float32)},
           id="onehot"),
    OpCase("OneHot", {"i": idx(4, 3, lo=0)},
           consts={"depth": np.array(4), "v": np.array([-1, 1], np.int64)}, attrs={"axis": 0},
           id="onehot_axis0_int64_values"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_index(case):
    check_op(case)
