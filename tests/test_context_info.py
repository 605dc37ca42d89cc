"""`qnn-build context-info`: a context binary described without loading it: header, backend, target,
precision, io with encodings, memory plan, checksum state; a corrupted file is described, with its
checksum marked, not refused; an htp context (model.htp.onnx/.bin/.json) by its sidecar. Each backend
describes its own contexts (Backend.describe_context); context-info asks them in turn."""

import json

import numpy as np
import onnx
import pytest
from test_cli import small_model

from qnn_build.backends import describe_context
from qnn_build.cli import main
from qnn_build.runtime.binding import Model
from qnn_build.runtime.ctx_info import read_info


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    d = tmp_path_factory.mktemp("context_info")
    onnx.save(small_model(dynamic=False), d / "m.onnx")
    np.savez(d / "cal.npz", x=np.random.default_rng(0).standard_normal((8, 2, 3)).astype(np.float32))
    for argv in (["convert", d / "m.onnx", "-o", d, "--precision", "w8a8", "--calibration", d / "cal.npz"],
                 ["model-lib", "--cpp", d / "model.cpp", "--bin", d / "model.bin", "-o", d / "libmodel.so"],
                 ["context-binary", "--backend", "npu", "--model", d / "libmodel.so", "-o", d / "model.ctx"]):
        assert main([*map(str, argv), "-q"]) == 0
    return d / "model.ctx"


def test_describes_our_context(ctx, capsys):
    assert main(["context-info", str(ctx), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    side = json.loads((ctx.parent / "model.ctx.json").read_text())
    assert info["backend"] == "npu" and info["precision"] == "w8a8" and info["target"].startswith(side["target"])
    assert info["checksum"]["state"] == "ok" and info["file_bytes"] == side["file_bytes"]
    assert info["memory_plan"] == {k: side[k] for k in ("arena_bytes", "tensor_bytes", "scratch_bytes")}
    assert info["ops"] == {"Gemm": 1, "Relu": 1} or info["ops"] == {"Gemm": 1}  # the npu may fuse the Relu
    with Model(context=str(ctx), backend="npu") as model:  # what the runtime loads says the same
        assert [(t["name"], t["shape"]) for t in info["inputs"]] == [(i.name, list(i.shape)) for i in model.inputs]
        assert [t["name"] for t in info["outputs"]] == [o.name for o in model.outputs]
    enc = info["inputs"][0]["encoding"]
    assert enc["bitwidth"] == 8 and len(enc["scale"]) == 1 and enc["scale"][0] > 0
    assert main(["context-info", str(ctx)]) == 0
    text = capsys.readouterr().out
    assert "backend      npu" in text and "checksum" in text and " ok" in text and "uint8 scale" in text


def test_a_flipped_byte_is_reported_not_refused(ctx, tmp_path):
    data = bytearray(ctx.read_bytes())
    data[len(data) // 2] ^= 0xFF
    (tmp_path / "bad.ctx").write_bytes(bytes(data))
    assert read_info(tmp_path / "bad.ctx")["checksum"]["state"].startswith("MISMATCH")


def test_describes_an_htp_context_by_its_sidecar(tmp_path):
    """The htp backend's three files: the sidecar names the others with their sha256."""
    import hashlib
    binary, wrapper = b"\x01" * 64, b"onnx wrapper"
    (tmp_path / "model.htp.bin").write_bytes(binary)
    (tmp_path / "model.htp.onnx").write_bytes(wrapper)
    side = {"format_version": 1, "backend": "htp", "soc": "x-elite", "chip": "SC8380XP", "htp_arch": 73,
            "precision": "w8a8", "qnn_version": "2.51.0",
            "binary": {"file": "model.htp.bin", "bytes": 64, "sha256": hashlib.sha256(binary).hexdigest()},
            "wrapper": {"file": "model.htp.onnx", "sha256": hashlib.sha256(wrapper).hexdigest()},
            "inputs": [{"name": "x", "shape": [1, 3], "dtype": "float32",
                        "encoding": {"bitwidth": 8, "scale": 0.5, "offset": -128}}], "outputs": []}
    (tmp_path / "model.htp.json").write_text(json.dumps(side))
    backend, info = describe_context(tmp_path / "model.htp.onnx")
    assert backend.name == "htp" and backend.describe_context(tmp_path / "model.htp.json") is not None
    assert info["backend"] == "htp" and info["target"] == "x-elite SC8380XP (arch 73)" and info["precision"] == "w8a8"
    assert info["checksum"]["state"] == "binary model.htp.bin ok; wrapper model.htp.onnx ok"
    assert info["inputs"][0]["encoding"] == {"bitwidth": 8, "signed": False, "scale": [0.5], "offset": [-128]}
    (tmp_path / "model.htp.bin").write_bytes(b"\x02" + binary[1:])
    assert "binary model.htp.bin MISMATCH" in describe_context(tmp_path / "model.htp.bin")[1]["checksum"]["state"]


def test_describes_a_real_htp_context(ctx, capsys):
    """A QNN context binary the htp backend generated (onnxruntime-qnn's HTP, x-elite)."""
    from qnn_build.htp.ep import INSTALL, available
    if not available():
        pytest.skip(f"onnxruntime-qnn is not installed: {INSTALL}")
    d = ctx.parent
    assert main(["convert", str(d / "m.onnx"), "-o", str(d / "qdq"), "--precision", "w8a8", "--calibration",
                 str(d / "cal.npz"), "--qdq", "-q"]) == 0
    wrapper = d / "htp" / "model.htp.onnx"
    assert main(["context-binary", "--backend", "htp", "--soc", "x-elite", "--model", str(d / "qdq/model.qdq.onnx"),
                 "-o", str(wrapper), "-q"]) == 0
    info = describe_context(wrapper.with_suffix(".bin"))[1]
    assert info["backend"] == "htp" and info["soc"] == "x-elite" and info["precision"] == "w8a8"
    assert info["checksum"]["state"] == "binary model.htp.bin ok; wrapper model.htp.onnx ok"
    assert [t["name"] for t in info["inputs"]] == ["x"] and info["inputs"][0]["encoding"]["bitwidth"] == 8
    assert main(["context-info", str(wrapper)]) == 0
    assert "qnn_version" in capsys.readouterr().out
