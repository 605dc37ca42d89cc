import numpy as np
import pytest

from .opcase import OpCase, check_op

rng = np.random.default_rng(0)


def r(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def einsum(equation, *operands, id, **kw):
    names = [f"x{i}" for i in range(len(operands))]
    return OpCase("Einsum", dict(zip(names, operands)), attrs={"equation": equation}, opset=12, id=id, **kw)


CASES = [
    einsum("ij,jk->ik", r(3, 4), r(4, 5), id="matmul"),
    einsum("bhid,bhjd->bhij", r(2, 3, 5, 8), r(2, 3, 6, 8), id="attention_scores"),
    einsum("bhij,bhjd->bhid", r(2, 3, 5, 6), r(2, 3, 6, 8), id="attention_values"),
    einsum("i,j->ij", r(7), r(5), id="outer_rotary_freqs"),
    einsum("...ij,...jk->...ik", r(2, 3, 4, 5), r(2, 3, 5, 2), id="ellipsis_batch"),
    einsum("ij->ji", r(3, 4), id="transpose"),
    einsum("ijk->j", r(3, 4, 5), id="sum_two_axes"),
    einsum("ij,ij->i", r(6, 9), r(6, 9), id="rowwise_dot"),
    einsum("ij,jk,kl->il", r(2, 3), r(3, 4), r(4, 5), id="chain_of_three"),
    einsum("bij,bjk", r(2, 3, 4), r(2, 4, 5), id="implicit_output"),
    einsum("abc,cd->abd", r(2, 3, 4), r(4, 6), id="contract_last"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_einsum(case):
    check_op(case)
