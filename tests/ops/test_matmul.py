import numpy as np
import pytest

from .opcase import OpCase, check_op

rng = np.random.default_rng(0)


def r(*shape):
    return rng.standard_normal(shape).astype(np.float32)


CASES = [
    # Gemm: transposes, alpha/beta, every shape of C, C absent, constant weights.
    OpCase("Gemm", {"a": r(3, 5), "b": r(5, 4)}, id="gemm_plain_no_c", opset=13),
    OpCase("Gemm", {"a": r(5, 3), "b": r(5, 4), "c": r(3, 4)}, attrs={"transA": 1}, id="gemm_trans_a"),
    OpCase("Gemm", {"a": r(3, 5), "b": r(4, 5), "c": r(3, 4)}, attrs={"transB": 1}, id="gemm_trans_b"),
    OpCase("Gemm", {"a": r(5, 3), "b": r(4, 5), "c": r(3, 4)}, attrs={"transA": 1, "transB": 1}, id="gemm_trans_ab"),
    OpCase("Gemm", {"a": r(3, 5), "b": r(5, 4), "c": r(3, 4)}, attrs={"alpha": 0.5, "beta": 2.0}, id="gemm_alpha_beta"),
    OpCase("Gemm", {"a": r(3, 5), "b": r(5, 4), "c": r(3, 4)}, attrs={"beta": 0.0}, id="gemm_beta_zero"),
    OpCase("Gemm", {"a": r(3, 5), "b": r(5, 4), "c": r(4)}, id="gemm_c_row"),
    OpCase("Gemm", {"a": r(3, 5), "b": r(5, 4), "c": r(1, 4)}, id="gemm_c_1xn"),
    OpCase("Gemm", {"a": r(3, 5), "b": r(5, 4), "c": r(3, 1)}, id="gemm_c_column"),
    OpCase("Gemm", {"a": r(3, 5), "b": r(5, 4), "c": r(1)}, id="gemm_c_single"),
    OpCase("Gemm", {"a": r(3, 5), "b": r(5, 4)}, consts={"c": np.float32(1.5)}, id="gemm_c_scalar"),
    OpCase("Gemm", {"a": r(2, 64)}, consts={"w": r(10, 64), "bias": r(10)},
           attrs={"transB": 1}, id="gemm_fc_const_weights"),
    OpCase("Gemm", {"a": r(3, 5), "b": r(5, 4), "c": r(3, 4)}, attrs={"beta": 0.5}, opset=7, id="gemm_opset7"),
    OpCase("Gemm", {"a": r(3, 5), "b": r(5, 4), "c": r(4)}, opset=9, id="gemm_opset9"),
    OpCase("Gemm", {"a": r(3, 5), "b": r(5, 4)}, opset=11, id="gemm_opset11_no_c"),
    OpCase("Gemm", {"a": r(70, 130), "b": r(130, 90), "c": r(90)}, rtol=1e-4, atol=1e-4, id="gemm_large"),
    # One or two rows of A (or one column of B): the matrix-vector path.
    OpCase("Gemm", {"a": r(1, 300)}, consts={"w": r(100, 300), "bias": r(100)}, attrs={"transB": 1},
           rtol=1e-4, atol=1e-5, id="gemm_m1_trans_b"),
    OpCase("Gemm", {"a": r(2, 300)}, consts={"w": r(300, 100), "bias": r(1, 100)}, attrs={"alpha": 0.5, "beta": 2.0},
           rtol=1e-4, atol=1e-5, id="gemm_m2_alpha_beta"),
    OpCase("Gemm", {"a": r(300, 1), "b": r(300, 70)}, attrs={"transA": 1}, rtol=1e-4, atol=1e-5,
           id="gemm_m1_trans_a_no_c"),
    OpCase("Gemm", {"a": r(2, 37), "b": r(37, 5), "c": r(2, 5)}, attrs={"transA": 0}, id="gemm_m2_small"),
    OpCase("Gemm", {"a": r(40, 30), "b": r(1, 30), "c": r(40, 1)}, attrs={"transB": 1}, rtol=1e-4, atol=1e-5,
           id="gemm_n1"),
    # Constant B over more than two rows, 64K weights or more: B packed into column panels at prepare.
    OpCase("Gemm", {"a": r(20, 256)}, consts={"w": r(300, 256), "bias": r(300)}, attrs={"transB": 1},
           rtol=1e-4, atol=1e-5, id="gemm_const_b_panels"),  # the last panel partial
    OpCase("Gemm", {"a": r(5, 300), "c": r(5, 1)}, consts={"w": r(300, 250)}, input_order=["a", "w", "c"],
           attrs={"alpha": 0.5, "beta": 2.0}, rtol=1e-4, atol=1e-5, id="gemm_const_b_alpha_beta"),
    OpCase("Gemm", {"a": r(7, 1400)}, consts={"w": r(1400, 48)}, rtol=1e-4, atol=1e-4, id="gemm_const_b_one_panel"),
    OpCase("MatMul", {"a": r(1, 1, 500)}, consts={"w": r(500, 300)}, rtol=1e-4, atol=1e-5, id="matmul_m1_const"),
    OpCase("MatMul", {"a": r(6, 1, 40), "b": r(6, 40, 30)}, rtol=1e-4, atol=1e-5, id="matmul_batched_m1"),
    OpCase("MatMul", {"a": r(6, 50, 40), "b": r(6, 40, 1)}, rtol=1e-4, atol=1e-5, id="matmul_batched_n1"),
    OpCase("MatMul", {"a": r(50, 40), "b": r(40)}, rtol=1e-4, atol=1e-5, id="matmul_vector_b"),
    # MatMul: 1-D operands, batches, broadcast batch dims, constant B merged into M.
    OpCase("MatMul", {"a": r(3, 4), "b": r(4, 5)}, id="matmul_2d"),
    OpCase("MatMul", {"a": r(4), "b": r(4, 5)}, id="matmul_1d_a"),
    OpCase("MatMul", {"a": r(3, 4), "b": r(4)}, id="matmul_1d_b"),
    OpCase("MatMul", {"a": r(4), "b": r(4)}, id="matmul_1d_both"),
    OpCase("MatMul", {"a": r(2, 3, 4), "b": r(4)}, id="matmul_batched_1d_b"),
    OpCase("MatMul", {"a": r(4), "b": r(2, 4, 5)}, id="matmul_1d_a_batched_b"),
    OpCase("MatMul", {"a": r(2, 3, 4), "b": r(2, 4, 5)}, id="matmul_batched"),
    OpCase("MatMul", {"a": r(2, 1, 3, 4), "b": r(1, 5, 4, 6)}, id="matmul_broadcast_batch"),
    OpCase("MatMul", {"a": r(3, 4), "b": r(2, 4, 5)}, id="matmul_2d_a_batched_b"),
    OpCase("MatMul", {"a": r(2, 3, 3, 4)}, consts={"w": r(4, 6)}, id="matmul_const_b_merged"),
    OpCase("MatMul", {"a": r(2, 3, 4)}, consts={"w": r(1, 4, 6)}, id="matmul_b_unit_batch"),
    OpCase("MatMul", {"a": r(12, 16, 32), "b": r(12, 32, 16)}, rtol=1e-4, atol=1e-5, id="matmul_attention_like"),
    OpCase("MatMul", {"a": r(3, 4), "b": r(4, 5)}, opset=9, id="matmul_opset9"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_matmul(case):
    check_op(case)


THREAD_CASES = [
    OpCase("MatMul", {"a": r(8, 9, 7), "b": r(8, 7, 5)}, id="batched"),
    OpCase("MatMul", {"a": r(8, 1, 70), "b": r(8, 70, 600)}, id="batched_m1"),
    OpCase("Gemm", {"a": r(1, 300)}, consts={"w": r(1000, 300)}, attrs={"transB": 1}, id="gemm_m1_trans_b"),
    OpCase("Gemm", {"a": r(2, 300)}, consts={"w": r(300, 1000)}, id="gemm_m2"),
    OpCase("Gemm", {"a": r(9, 300)}, consts={"w": r(250, 300), "bias": r(250)}, attrs={"transB": 1},
           id="gemm_const_b_panels"),
]


@pytest.mark.parametrize("case", THREAD_CASES, ids=str)
def test_threads_agree(case):
    """Work split over threads gives the same bits as one thread."""
    from onnx_backend import run_onnx
    from .opcase import make_model
    model = make_model(case)
    one = run_onnx(model, case.inputs, threads=1)["y0"]
    two = run_onnx(model, case.inputs, threads=2)["y0"]
    np.testing.assert_array_equal(one, two)
