"""The npu against Qualcomm's HTP (issue 15), the CI subset of the differential bench: the cases of
npu_vs_htp_cases.SUBSET run on both backends at 8- and 16-bit activations and agree within the
bounds docs/npu-vs-htp.md reports for them (`python bench/npu_vs_htp.py` runs every case).
Without onnxruntime-qnn only the bench's own checks run."""

import numpy as np
import pytest

from qnn_build.backends.npu import BOUNDARY_OPS, integer_ops
from qnn_build.quant.encoding import activation_encoding, dequantize
from qnn_build.report.metrics import agreement
from tests.htp.differential import Case, Outcome, run_table, summarize
from tests.htp.npu_vs_htp_cases import SUBSET, all_cases, subset

# (op, activation bits) -> the largest difference in output codes the npu may show against the htp
# on the subset's cases: 0 where the npu follows the HTP's rule, otherwise the measured bound (its
# reason in docs/npu.md "Against the HTP").
BOUNDS = {
    ("Add", 8): 0, ("Add", 16): 0,
    ("Mul", 8): 0, ("Mul", 16): 0,
    ("Sigmoid", 8): 0, ("Sigmoid", 16): 3,
    ("Conv", 8): 1, ("Conv", 16): 1,
    ("AveragePool", 8): 1, ("AveragePool", 16): 1,
    ("Softmax", 8): 0, ("Softmax", 16): 1,
    ("Resize", 8): 0, ("Resize", 16): 0,
}


def test_every_npu_integer_op_has_cases():
    """The bench covers every op the npu runs in integers (the fp16 boundary ops excepted: the HTP
    has no such node, it converts at the graph's edges)."""
    missing = integer_ops() - BOUNDARY_OPS - {c.op for c in all_cases()}
    assert not missing, f"npu ops without a case in tests/htp/npu_vs_htp_cases.py: {sorted(missing)}"
    assert {(c.op, c.name) for c in subset()} == SUBSET
    assert {op for op, _ in SUBSET} == {op for op, _ in BOUNDS}


def test_pattern_classes_each_difference():
    """A tie the HTP rounded up, a saturated value, and a value the npu rounded nearer."""
    case = Case("X", "x", [], {}, {})
    o = Outcome(case, 8, "y", npu=np.array([10, 255, 7, 5]), htp=np.array([11, 250, 8, 5]),
                ideal=np.array([10.5, 300.0, 7.2, 5.0]), qmax=255, zp=0)
    assert o.pattern() == {"tie_up": 1, "saturated": 1, "npu_nearer": 1}
    assert o.tie_rule() == {"pos_up": 1}


def test_test_json_agreement_counts_values_within_1_lsb():
    """The test builder's npu-vs-htp agreement (test.json) reports the share this bench measures."""
    enc = activation_encoding(-1.0, 1.0, 8)
    built = dequantize(np.array([0, 10, 20, 30]), enc)
    other = dequantize(np.array([0, 11, 22, 30]), enc)
    got = agreement(other, built, enc)
    assert got["max_lsb"] == 2 and got["within_1_lsb"] == 0.75


@pytest.mark.needs_qnn
def test_subset_agrees_with_the_htp_within_its_bounds(tmp_path):
    table = summarize(run_table(subset(), work=tmp_path))
    for (op, bits), bound in BOUNDS.items():
        row = table[op][bits]
        assert not row["refused"], f"{op} a{bits}: {row['refused']}"
        assert row["max_lsb"] <= bound, (f"{op} a{bits}: npu and htp differ by up to {row['max_lsb']} LSB "
                                         f"(bound {bound}; {row['pattern']})")
