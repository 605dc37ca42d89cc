import numpy as np
import pytest

from .opcase import OpCase, check_op

rng = np.random.default_rng(0)


def r(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def pos(*shape):
    return (rng.random(shape) + 0.5).astype(np.float32)


def ties(*shape):
    """Small integers, so every row has repeated maxima and minima."""
    return rng.integers(0, 3, shape).astype(np.float32)


def axes(*a):
    return np.array(a, dtype=np.int64)


def reduce_cases(op, data=r):
    """The attribute combinations every reduction is tested with, in both ways of giving axes."""
    name = op[len("Reduce"):].lower()
    since = 13 if op == "ReduceSum" else 18
    return [
        OpCase(op, {"x": data(2, 3, 4)}, attrs={"axes": [1]}, opset=since - 1, id=f"{name}_attr_axis1"),
        OpCase(op, {"x": data(2, 3, 4)}, attrs={"axes": [-1], "keepdims": 0}, opset=since - 1,
               id=f"{name}_attr_last_no_keepdims"),
        OpCase(op, {"x": data(2, 3, 4, 5)}, attrs={"axes": [0, 2]}, opset=since - 1, id=f"{name}_attr_two_groups"),
        OpCase(op, {"x": data(2, 3, 4)}, opset=since - 1, id=f"{name}_attr_default_all"),
        OpCase(op, {"x": data(2, 3, 4)}, attrs={"keepdims": 0}, opset=since - 1, id=f"{name}_all_no_keepdims"),
        OpCase(op, {"x": data(2, 3, 4)}, consts={"axes": axes(0)}, opset=since, id=f"{name}_input_axis0"),
        OpCase(op, {"x": data(2, 3, 4, 5)}, consts={"axes": axes(-3, -1)}, attrs={"keepdims": 0}, opset=since,
               id=f"{name}_input_neg_axes"),
        OpCase(op, {"x": data(2, 3, 4)}, consts={"axes": axes()}, opset=since, id=f"{name}_input_empty_all"),
        OpCase(op, {"x": data(2, 3, 4)}, input_order=["x"], opset=since, id=f"{name}_input_absent_all"),
        OpCase(op, {"x": data(2, 3, 4)}, consts={"axes": axes()}, attrs={"noop_with_empty_axes": 1}, opset=since,
               id=f"{name}_noop_empty_axes"),
        OpCase(op, {"x": data(2, 1, 4)}, consts={"axes": axes(1)}, opset=since, id=f"{name}_unit_axis"),
    ]


CASES = (
    reduce_cases("ReduceSum") + reduce_cases("ReduceMean") + reduce_cases("ReduceMax") + reduce_cases("ReduceMin")
    + reduce_cases("ReduceProd") + reduce_cases("ReduceSumSquare") + reduce_cases("ReduceL1")
    + reduce_cases("ReduceL2") + reduce_cases("ReduceLogSum", pos) + reduce_cases("ReduceLogSumExp")
    + [
        # Long reductions: accuracy of the double accumulators, and the strided (inner > 1) path.
        OpCase("ReduceMean", {"x": r(1, 3, 256, 256) + 3.0}, attrs={"axes": [2, 3]}, opset=13, rtol=1e-6,
               id="mean_global_pool_long"),
        OpCase("ReduceMean", {"x": r(300000) + 3.0}, attrs={"keepdims": 0}, opset=13, rtol=1e-6, id="mean_all_long"),
        OpCase("ReduceSum", {"x": r(64, 1000, 5)}, consts={"axes": axes(1)}, rtol=1e-5, atol=1e-4,
               id="sum_middle_long"),
        OpCase("ReduceMax", {"x": r(2, 700, 300)}, attrs={"axes": [1]}, opset=13, id="max_strided_wide"),
        OpCase("ReduceMean", {"x": r(4, 7, 768)}, attrs={"axes": [-1]}, opset=13, id="mean_layer_norm_like"),
        # Bool ReduceMax / ReduceMin (opset 20): any / all.
        OpCase("ReduceMax", {"x": rng.random((3, 4, 5)) > 0.7}, consts={"axes": axes(1)}, opset=20, id="max_bool_any"),
        OpCase("ReduceMin", {"x": rng.random((3, 4, 5)) > 0.3}, consts={"axes": axes(0, 2)}, attrs={"keepdims": 0},
               opset=20, id="min_bool_all"),
        # Int64 ReduceSum: a count (a mask cast to int64 and summed, as tesseranet's padding count),
        # values past float32's exact integers, two passes and a strided one.
        OpCase("ReduceSum", {"x": rng.integers(0, 2, (2, 5, 7))}, consts={"axes": axes(-1)}, id="sum_int64_count"),
        OpCase("ReduceSum", {"x": rng.integers(-2**40, 2**40, (3, 4, 5, 6))}, consts={"axes": axes(0, 2)},
               attrs={"keepdims": 0}, id="sum_int64_two_groups_large"),
        OpCase("ReduceSum", {"x": rng.integers(-9, 9, (4, 300, 3))}, consts={"axes": axes(1)}, id="sum_int64_strided"),
        OpCase("ReduceSum", {"x": rng.integers(-9, 9, (2, 3, 4))}, attrs={"axes": [1]}, opset=12, id="sum_int64_attr"),
        # ArgMax / ArgMin: axes, keepdims, ties with select_last_index, older opsets.
        OpCase("ArgMax", {"x": r(3, 4, 5)}, id="argmax_default_axis0"),
        OpCase("ArgMax", {"x": r(3, 4, 5)}, attrs={"axis": 1, "keepdims": 0}, id="argmax_axis1_no_keepdims"),
        OpCase("ArgMax", {"x": r(3, 1000)}, attrs={"axis": -1}, id="argmax_last_long"),
        OpCase("ArgMax", {"x": ties(4, 6, 3)}, attrs={"axis": 1}, id="argmax_ties_first"),
        OpCase("ArgMax", {"x": ties(4, 6, 3)}, attrs={"axis": 1, "select_last_index": 1}, id="argmax_ties_last"),
        OpCase("ArgMax", {"x": ties(4, 6)}, attrs={"axis": 1, "select_last_index": 1}, id="argmax_ties_last_rows"),
        OpCase("ArgMax", {"x": r(3, 4)}, attrs={"axis": 1}, opset=11, id="argmax_opset11"),
        OpCase("ArgMin", {"x": r(3, 4, 5)}, attrs={"axis": 2}, id="argmin_axis2"),
        OpCase("ArgMin", {"x": ties(4, 6, 3)}, attrs={"axis": 0, "select_last_index": 1}, id="argmin_ties_last"),
        OpCase("ArgMin", {"x": ties(5, 6)}, attrs={"axis": -1, "keepdims": 0}, id="argmin_ties_first"),
        # One element along the axis (a single-class detector's scores): every index is 0.
        OpCase("ArgMax", {"x": r(1, 300, 1)}, attrs={"axis": 2}, id="argmax_axis_of_one_last"),
        OpCase("ArgMax", {"x": r(2, 1, 5)}, attrs={"axis": 1, "keepdims": 0}, id="argmax_axis_of_one_inner"),
        OpCase("ArgMin", {"x": r(4, 1)}, attrs={"axis": 1, "select_last_index": 1}, id="argmin_axis_of_one"),
    ]
)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_reduce(case):
    check_op(case)
