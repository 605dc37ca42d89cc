"""`convert --float-fallback`: nodes the npu has no integer kernel for are kept in fp16 behind
converter-inserted Quantize/Dequantize nodes, run on the npu, and agree with the cpu simulation.
Also: the Python list of npu ops (backends/npu.py) agrees with the runtime's registry."""

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from qnn_build.backends.npu import BOUNDARY_OPS, integer_ops
from qnn_build.cli import main as cli_main
from qnn_build.convert import convert
from qnn_build.errors import RuntimeFailure
from qnn_build.npu_lowering.movement import SINGLE_INPUT_MOVERS
from qnn_build.ops.kinds import BYTE_MOVERS
from qnn_build.runtime.binding import Model
from qnn_build.toolchain import RUNTIME_DIR, build_model_lib

ZOO = Path(__file__).resolve().parents[1] / "models"

SHAPE = [1, 4, 3, 4]
# Unary ops over [1, 4, 3, 4] that keep the shape or reduce the last axis to 1 (which broadcasts back),
# each with its attributes. The tests use the first two that have no npu integer kernel when they run,
# so they keep testing fallback as kernels are added. Constants in fp16 nodes: see the LSTM test.
CANDIDATES = {
    "LRN": ({"size": 3}, []),
    "LpPool": ({"kernel_shape": [1, 1], "p": 2}, []),
    "ReduceL2": ({"axes": [3], "keepdims": 1}, []),
    "ReduceSumSquare": ({"axes": [3], "keepdims": 1}, []),
    "ReduceLogSumExp": ({"axes": [3], "keepdims": 1}, []),
}


def fallback_ops():
    missing = [op for op in CANDIDATES if op not in integer_ops()]
    if len(missing) < 2:
        pytest.skip("the candidate ops have npu integer kernels now: extend CANDIDATES")
    return missing[0], missing[1]


def fallback_model(tmp_path, op1, op2):
    """a = x*y (npu); b = op1(a, consts) and c = op2(b, consts) (fallback, chained); d = c + x (npu);
    e = Sigmoid(b) (npu: b is read by an integer node and a fallback node)."""
    nodes = [helper.make_node("Mul", ["x", "y"], ["a"], name="mul")]
    inits = []
    for name, op, src, dst in (("first_fp16", op1, "a", "b"), ("second_fp16", op2, "b", "c")):
        attrs, consts = CANDIDATES[op]
        const_names = [f"{name}_c{k}" for k in range(len(consts))]
        inits += [numpy_helper.from_array(v, n) for n, v in zip(const_names, consts)]
        nodes.append(helper.make_node(op, [src] + const_names, [dst], name=name, **attrs))
    nodes += [helper.make_node("Add", ["c", "x"], ["d"], name="add"),
              helper.make_node("Sigmoid", ["b"], ["e"], name="sigmoid")]
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, SHAPE) for n in ("x", "y", "d", "e")]
    model = helper.make_model(helper.make_graph(nodes, "fallback", io[:2], io[2:], inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "calib.npz", **random_feeds(rng, 32))
    return path, tmp_path / "calib.npz"


def random_feeds(rng, count=None):
    shape = SHAPE if count is None else [count, *SHAPE]
    return {"x": rng.uniform(0.1, 2, shape).astype(np.float32), "y": rng.uniform(0.2, 1.5, shape).astype(np.float32)}


def build(tmp_path, src, calib, precision, tag, **kw):
    out = tmp_path / tag
    desc = convert(src, out, precision=precision, calibration=calib, **kw)
    lib = build_model_lib(out / "model.cpp", out / "model.bin", out / f"libfallback_{tag}.so")
    return desc, lib


@pytest.mark.parametrize("precision", ["w8a8", "w8a16"])
def test_fallback_runs_on_npu_and_matches_cpu(tmp_path, precision):
    op1, op2 = fallback_ops()
    src, calib = fallback_model(tmp_path, op1, op2)
    desc, lib = build(tmp_path, src, calib, precision, precision, float_fallback=True)
    assert desc["float_fallback"] == [{"name": "first_fp16", "op": op1, "reason": f"no npu kernel for {op1}"},
                                      {"name": "second_fp16", "op": op2, "reason": f"no npu kernel for {op2}"}]
    recorded = json.loads((tmp_path / precision / "model.json").read_text())
    assert recorded["float_fallback"] == desc["float_fallback"]
    assert desc["ops"]["Dequantize"] == 1 and desc["ops"]["Quantize"] == 2  # a in; b and c out

    enc = json.loads((tmp_path / precision / "model.encodings.json").read_text())
    assert enc  # still written; fp16 tensors are listed as float
    rng = np.random.default_rng(1)
    cpu, npu = Model(lib, backend="cpu"), Model(lib, backend="npu")
    scales = {o["name"]: o["encoding"]["scale"] for o in desc["outputs"]}  # d and e are integer
    for _ in range(5):
        feeds = random_feeds(rng)
        got_cpu, got_npu = cpu.run(feeds), npu.run(feeds)
        for name in ("d", "e"):
            # One LSB of the integer Mul before the fp16 nodes, carried through them, and one more at
            # the integer output: a few output LSBs.
            np.testing.assert_allclose(got_npu[name], got_cpu[name], rtol=0, atol=4 * scales[name] + 1e-3,
                                       err_msg=name)


def lstm_model(tmp_path):
    """x -> Relu -> LSTM -> Sigmoid: converted with lower_rnn=False, the LSTM node (which never gets an
    npu kernel: quantized precisions unroll it) is kept in fp16 with its W, R, B as half constants."""
    rng = np.random.default_rng(5)
    seq, batch, inp, hidden = 5, 2, 3, 4
    consts = {"W": rng.uniform(-0.8, 0.8, (1, 4 * hidden, inp)).astype(np.float32),
              "R": rng.uniform(-0.8, 0.8, (1, 4 * hidden, hidden)).astype(np.float32),
              "B": rng.uniform(-0.3, 0.3, (1, 8 * hidden)).astype(np.float32)}
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu"),
             helper.make_node("LSTM", ["a", "W", "R", "B"], ["y"], name="lstm_fp16", hidden_size=hidden),
             helper.make_node("Sigmoid", ["y"], ["z"], name="sigmoid")]
    model = helper.make_model(helper.make_graph(
        nodes, "lstm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, batch, inp])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [seq, 1, batch, hidden])],
        [numpy_helper.from_array(v, k) for k, v in consts.items()]), opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, tmp_path / "lstm.onnx")
    np.savez(tmp_path / "lstm_calib.npz", x=rng.uniform(-1, 2, (24, seq, batch, inp)).astype(np.float32))
    return tmp_path / "lstm.onnx", tmp_path / "lstm_calib.npz", consts


def test_fp16_node_with_constants_runs_on_npu(tmp_path):
    src, calib, consts = lstm_model(tmp_path)
    desc, lib = build(tmp_path, src, calib, "w8a8", "lstm", lower_rnn=False, float_fallback=True)
    assert desc["float_fallback"] == [{"name": "lstm_fp16", "op": "LSTM", "reason": "no npu kernel for LSTM"}]
    assert desc["ops"] == {"Dequantize": 1, "LSTM": 1, "Quantize": 1, "Relu": 1, "Sigmoid": 1}
    doc = json.loads((tmp_path / "lstm" / "model.encodings.json").read_text())
    for name in ("W", "R", "B"):
        assert doc["param_encodings"][name] == [{"bitwidth": 16, "dtype": "float"}]
    rng = np.random.default_rng(6)
    cpu, npu = Model(lib, backend="cpu"), Model(lib, backend="npu")
    scale = desc["outputs"][0]["encoding"]["scale"]
    for _ in range(4):
        feeds = {"x": rng.uniform(-1, 2, (5, 2, 3)).astype(np.float32)}
        np.testing.assert_allclose(npu.run(feeds)["z"], cpu.run(feeds)["z"], rtol=0, atol=3 * scale)


def test_fallback_graph_rewrite(tmp_path):
    """Constants of fp16 nodes are half from their float values; activations fp16; boundaries placed."""
    from qnn_build.convert import build_graph
    from qnn_build.quant import QuantOptions, Stats, quantize_graph
    from qnn_build.quant.calibrate import TensorStats
    from qnn_build.quant.fallback import apply_float_fallback, float_constants
    from qnn_build.options import PRECISIONS

    src, _, consts = lstm_model(tmp_path)
    graph = build_graph(src)
    names = [n for n in graph.tensors if not graph.tensor(n).is_const]
    stats = Stats({n: TensorStats(-3.0, 3.0, np.zeros(16, np.int64), None) for n in names})
    floats = float_constants(graph)
    quantize_graph(graph, PRECISIONS["w8a8"], stats, QuantOptions())
    assert graph.tensor("W").dtype == np.int8  # quantized first
    kept = apply_float_fallback(graph, floats, lambda node: None if node.op_type in integer_ops() else "no kernel")
    assert kept == [{"name": "lstm_fp16", "op": "LSTM", "reason": "no kernel"}]
    node = next(n for n in graph.nodes if n.op_type == "LSTM")
    for k, name in ((1, "W"), (2, "R"), (3, "B")):
        t = graph.tensor(node.inputs[k])
        assert node.inputs[k] == name and t.dtype == np.float16 and t.encoding is None
        np.testing.assert_array_equal(t.const, consts[name].astype(np.float16))
    assert graph.tensor(node.inputs[0]).encoding.is_float and graph.tensor(node.outputs[0]).encoding.is_float
    assert [n.op_type for n in graph.nodes] == ["Relu", "Dequantize", "LSTM", "Quantize", "Sigmoid"]
    assert not graph.tensor("a").encoding.is_float and not graph.tensor("y").encoding.is_float


def test_graph_input_read_only_by_fp16_nodes_is_fp16(tmp_path):
    """x feeds only a fallback node: x itself becomes fp16 (no Dequantize); the npu agrees with the cpu."""
    _, op = fallback_ops()
    attrs, consts = CANDIDATES[op]
    names = [f"k{i}" for i in range(len(consts))]
    model = helper.make_model(helper.make_graph(
        [helper.make_node(op, ["x"] + names, ["h"], name="only_fp16", **attrs),
         helper.make_node("Add", ["h", "y"], ["z"], name="add")], "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, SHAPE) for n in ("x", "y")],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, SHAPE)],
        [numpy_helper.from_array(v, n) for n, v in zip(names, consts)]), opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, tmp_path / "m.onnx")
    rng = np.random.default_rng(3)
    np.savez(tmp_path / "c.npz", **random_feeds(rng, 16))
    desc, lib = build(tmp_path, tmp_path / "m.onnx", tmp_path / "c.npz", "w8a16", "input_fp16", float_fallback=True)
    assert desc["inputs"][0]["encoding"] == {"bitwidth": 16, "dtype": "float"}
    assert "Dequantize" not in desc["ops"] and desc["ops"]["Quantize"] == 1
    feeds = random_feeds(rng)
    a, b = Model(lib, backend="cpu").run(feeds)["z"], Model(lib, backend="npu").run(feeds)["z"]
    np.testing.assert_allclose(b, a, rtol=0, atol=2 * desc["outputs"][0]["encoding"]["scale"])


def test_without_flag_npu_refuses_and_suggests_fallback(tmp_path):
    op1, op2 = fallback_ops()
    src, calib = fallback_model(tmp_path, op1, op2)
    desc, lib = build(tmp_path, src, calib, "w8a8", "plain")
    assert "float_fallback" not in desc
    with pytest.raises(RuntimeFailure, match=r"node 'first_fp16' \(" + op1 + r"\): no npu kernel for .*"
                                             r"--float-fallback"):
        Model(lib, backend="npu")


def test_cli_flag_prints_the_fp16_nodes(tmp_path, capsys):
    op1, op2 = fallback_ops()
    src, calib = fallback_model(tmp_path, op1, op2)
    out = tmp_path / "cli"
    assert cli_main(["convert", str(src), "-o", str(out), "--precision", "w8a8", "--input-list", str(calib),
                     "--float-fallback"]) == 0
    text = capsys.readouterr().out
    assert "2 node(s) kept in fp16" in text and "first_fp16" in text and "second_fp16" in text
    assert [k["name"] for k in json.loads((out / "model.json").read_text())["float_fallback"]] == \
        ["first_fp16", "second_fp16"]
    config = tmp_path / "convert.json"
    config.write_text(json.dumps({"precision": "w8a8", "calibration": str(calib), "float_fallback": True}))
    assert cli_main(["convert", str(src), "-o", str(tmp_path / "cfg"), "--config", str(config), "-q"]) == 0
    assert "float_fallback" in json.loads((tmp_path / "cfg" / "model.json").read_text())


def test_fallback_is_a_no_op_when_every_node_has_a_kernel(tmp_path):
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["y"], name="add")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])]), opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "c.npz", x=np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 2, 3))
    desc = convert(tmp_path / "m.onnx", tmp_path / "o", precision="w8a8", calibration=tmp_path / "c.npz",
                   float_fallback=True)
    assert desc["float_fallback"] == [] and desc["ops"] == {"Add": 1}


FLOAT_ACCURACY = {"digits_lstm": 0.9675, "digits_gru": 0.985}  # models/README.md


@pytest.mark.parametrize("name", ["digits_lstm", "digits_gru"])
def test_zoo_recurrent_models_run_on_npu(tmp_path, name):
    """The zoo's recurrent models at w8a8: unrolled into primitive ops, whatever the npu lacks kept in
    fp16 (nothing, once every primitive has its kernel); the npu keeps the accuracy and agrees with
    the cpu simulation on the logits within a few LSBs."""
    m = ZOO / name
    out = tmp_path / name
    desc = convert(m / "model.onnx", out, {"sequence": [1, 8, 8]}, precision="w8a8",
                   calibration=m / "calibration.npz", float_fallback=True)
    assert not {"LSTM", "GRU"} & set(desc["ops"])
    lib = build_model_lib(out / "model.cpp", out / "model.bin", out / f"libfallback_zoo_{name}.so")
    cpu, npu = Model(lib, backend="cpu"), Model(lib, backend="npu")
    data = np.load(m / "test.npz")
    x, labels = data["sequence"], data["labels"]
    enc = desc["outputs"][0]["encoding"]  # fp16 (no scale) when the Gemm is kept in fp16
    tol = 8 * enc["scale"] if "scale" in enc else 0.05
    pred_cpu, pred_npu = [], []
    for i in range(len(x)):
        a, b = cpu.run({"sequence": x[i]})["logits"], npu.run({"sequence": x[i]})["logits"]
        np.testing.assert_allclose(b, a, rtol=0, atol=tol)
        pred_cpu.append(int(np.argmax(a)))
        pred_npu.append(int(np.argmax(b)))
    pred_cpu, pred_npu = np.array(pred_cpu), np.array(pred_npu)
    assert np.mean(pred_cpu == pred_npu) >= 0.99
    # Measured: lstm 96.75 %, gru 98.50 % on both backends (= float; the recurrence is 16-bit).
    assert np.mean(pred_npu == labels) >= FLOAT_ACCURACY[name] - 0.01


# ---- backends/npu.py against the runtime's registry ----

PROBE_CPP = r"""
#include <cstring>
#include "qnnb.h"

static char g_op[128] = "Identity";

extern "C" QNNB_EXPORT void probe_set_op(const char* op) {
    std::strncpy(g_op, op, sizeof(g_op) - 1);
}

#define CHECK(call) do { qnnb_status s_ = (call); if (s_ != QNNB_OK) return s_; } while (0)

// One node of the chosen op over 8-bit activations (a fp16 output for Dequantize), three inputs so
// that kernels reading a second or third operand find one.
extern "C" QNNB_EXPORT qnnb_status qnnb_model_compose(const qnnb_compose_api* api, qnnb_graph* g) {
    const int64_t dims[2] = {2, 4};
    qnnb_tensor_id in[3], out;
    const char* names[3] = {"a", "b", "c"};
    float scale = 0.05f;
    int32_t offset = -128;
    const qnnb_encoding q8 = {QNNB_ENCODING_INT, 8, 0, -1, -1, 0, 1, &scale, &offset};
    const qnnb_encoding f16 = {QNNB_ENCODING_FP16, 16, 1, -1, -1, 0, 0, nullptr, nullptr};
    for (int i = 0; i < 3; ++i) {
        CHECK(api->add_tensor(g, names[i], QNNB_FLOAT32, 2, dims, nullptr, &in[i]));
        CHECK(api->set_encoding(g, in[i], &q8));
    }
    CHECK(api->add_tensor(g, "y", QNNB_FLOAT32, 2, dims, nullptr, &out));
    CHECK(api->set_encoding(g, out, std::strcmp(g_op, "Dequantize") == 0 ? &f16 : &q8));
    CHECK(api->add_node(g, "probe", g_op, in, 3, &out, 1, nullptr, 0));
    return api->set_io(g, in, 3, &out, 1);
}
"""

PROBE_SCRIPT = """
import ctypes, json, sys
from qnn_build.errors import RuntimeFailure
from qnn_build.npu_lowering.movement import SINGLE_INPUT_MOVERS
from qnn_build.runtime.binding import Model
lib_path, ops = sys.argv[1], json.loads(sys.argv[2])
probe = ctypes.CDLL(lib_path)
probe.probe_set_op.argtypes = [ctypes.c_char_p]
found, errors = {}, {}
for op in ops:
    probe.probe_set_op(op.encode())
    try:
        Model(lib_path, backend="npu").close()
        found[op] = True
    except RuntimeFailure as e:
        found[op] = "no npu kernel for" not in str(e)  # also table entries that only refuse
        errors[op] = str(e)
print(json.dumps({"found": found, "errors": errors}))
"""


def _table_ops(files) -> set:
    """Op names of the kernel tables in runtime sources: entries like {"Op", prepare, run}."""
    ops = set()
    for f in files:
        ops |= set(re.findall(r'\{\s*"([A-Za-z0-9_]+)"\s*,\s*[A-Za-z_][\w:<>]*\s*,', f.read_text()))
    return ops


def test_byte_movers_mirror_the_npu_registry():
    text = (RUNTIME_DIR / "npu" / "registry.cpp").read_text()
    block = re.search(r"kByteMovers\s*=\s*\{(.*?)\};", text, re.S).group(1)
    assert set(re.findall(r'"(\w+)"', block)) == BYTE_MOVERS
    # the npu lowering's re-encoding movers (N20) are byte movers too: one list, and its subsets
    assert {*SINGLE_INPUT_MOVERS, "Split"} <= BYTE_MOVERS


def test_support_set_matches_runtime_registry(tmp_path):
    """Every op with a cpu or npu kernel table entry (and every op Python lists) is finalized as a
    one-node graph on the npu: 'no npu kernel' exactly for the ops integer_ops() leaves out."""
    cpu_ops = _table_ops((RUNTIME_DIR / "cpu").glob("*.cpp"))
    npu_table_ops = _table_ops((RUNTIME_DIR / "npu").glob("*.cpp"))
    supported = integer_ops()
    assert BOUNDARY_OPS <= supported
    ops = sorted(cpu_ops | npu_table_ops | supported | {"NoSuchOp"})
    (tmp_path / "probe.cpp").write_text(PROBE_CPP)
    (tmp_path / "empty.bin").write_bytes(b"\0")
    lib = build_model_lib(tmp_path / "probe.cpp", tmp_path / "empty.bin", tmp_path / "libnpu_probe.so")
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(PROBE_SCRIPT), str(lib), json.dumps(ops)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"probe crashed (a kernel's prepare on a malformed node?): {r.stderr[-2000:]}"
    result = json.loads(r.stdout.strip().splitlines()[-1])
    found = result["found"]
    # An op no table knows: the runtime's own message, which suggests the flag.
    assert "node 'probe' (NoSuchOp): no npu kernel for this op (convert with --float-fallback" in \
        result["errors"]["NoSuchOp"]
    # A byte mover runs the cpu kernel, so it is found where the cpu has one.
    expected = {op: op in supported and (op not in BYTE_MOVERS or op in cpu_ops) for op in ops}
    wrong = {op: found[op] for op in ops if found[op] != expected[op]}
    assert not wrong, (f"backends/npu.py disagrees with the runtime for {wrong} (True: the runtime has a "
                       f"kernel): add the op's rule to npu_lowering/lower.py FAMILIES or fix the registry")
