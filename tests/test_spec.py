"""The spec layer: loading, error messages (file:line: key: message), resolution into step configs."""

import json
import shutil
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from qnn_build.errors import QnnBuildError
from qnn_build.spec import SpecError, load_spec, load_zoo, resolve, write_step_configs
from qnn_build.spec.validate import load_schema

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "specs"
SPEC = "models/digits_cnn.yaml"


def write_data_files(models: Path) -> None:
    """The files the fixture spec points to. The 'onnx' is a dummy: the spec layer only checks it exists."""
    folder = models / "digits_cnn"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.onnx").write_bytes(b"not really onnx")
    np.savez(folder / "calibration.npz", image=np.zeros((4, 1, 1, 8, 8), np.float32))
    np.savez(folder / "test.npz", image=np.zeros((4, 1, 1, 8, 8), np.float32), labels=np.arange(4))


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A temp project root (the working directory) with models/digits_cnn.yaml and its data files."""
    monkeypatch.chdir(tmp_path)
    write_data_files(tmp_path / "models")
    shutil.copy(FIXTURES / "digits_cnn.yaml", tmp_path / SPEC)
    return tmp_path


def edit(root: Path, old: str, new: str, spec: str = SPEC) -> Path:
    path = root / spec
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))
    return path


def load(path=SPEC):
    return load_spec(path, CONFIGS)


# -- a valid spec ---------------------------------------------------------------------------------


def test_valid_spec_loads_with_canonical_names_and_defaults(project):
    spec = load()
    assert spec.name == "digits_cnn"
    assert spec.precisions == ["fp32", "fp16", "w8a8", "w4a16"]  # int8, int4 are aliases
    assert spec.targets == [("cpu", "x86_64-linux")]
    assert spec.inputs == {"image": {"shape": [1, 1, 8, 8], "value": None},
                           "scale": {"shape": [1], "value": 0.5}}
    assert spec.outputs == ["logits"]
    assert spec.quantization["act_range"] == "auto"  # qnn-build's default (configs/precisions.yaml sets none)
    assert spec.quantization["block_size"] == 32  # from the spec
    thresholds = spec.test["thresholds"]
    assert thresholds["fp32"] == {"sqnr_db": 60, "rel_err": 1e-4, "cosine": 0.99}
    assert thresholds["w8a8"] == {"sqnr_db": 20, "top1": 0.9, "cosine": 0.99}  # per-precision override
    assert thresholds["w4a16"] == {"sqnr_db": 10, "cosine": 0.99}


def test_valid_spec_resolves_to_relative_step_configs(project):
    resolved = resolve(load(), project)
    assert resolved.convert["fp32"] == {
        "input_dims": {"image": [1, 1, 8, 8], "scale": [1]},
        "input_values": {"scale": 0.5},
        "out_nodes": ["logits"],
        "precision": "fp32",
        "source": "models/digits_cnn/model.onnx",
    }
    w8a8 = resolved.convert["w8a8"]
    assert w8a8["calibration"] == "models/digits_cnn/calibration.npz"
    # convert's own option names, so `qnn-build convert --config` reads the file as it is
    assert {k: v for k, v in w8a8.items() if k not in resolved.convert["fp32"]} == {
        "calibration": "models/digits_cnn/calibration.npz", "act_range": "auto", "bias_correction": False,
        "cle": False, "per_tensor": False, "recurrent_bits": 16, "weight_range": "minmax", "weight_rounding": "auto"}  # no block_size: not 4-bit
    assert resolved.convert["w4a16"]["block_size"] == 32
    assert resolved.model_lib["x86_64-linux"]["target"]["shared_lib"] == "lib{name}.so"
    assert resolved.test[("w8a8", "cpu")] == {"data": "models/digits_cnn/test.npz", "labels": "labels",
                                              "samples": 200,
                                              "thresholds": {"cosine": 0.99, "sqnr_db": 20, "top1": 0.9}}
    assert resolved.release == {"version": "0.1.0", "zoo": "qnn-zoo"}
    everything = json.dumps([resolved.convert, resolved.model_lib, list(resolved.test.values())])
    assert str(project) not in everything


def test_write_step_configs_layout_and_bytes(project, tmp_path_factory):
    paths = write_step_configs(resolve(load(), project), project / "out")
    relative = sorted(p.relative_to(project / "out").as_posix() for p in paths)
    assert relative == sorted([
        "digits_cnn/release.config.json",
        "digits_cnn/model_lib/x86_64-linux.config.json",
        *(f"digits_cnn/{p}/convert.config.json" for p in ("fp32", "fp16", "w8a8", "w4a16")),
        *(f"digits_cnn/{p}/cpu/test.config.json" for p in ("fp32", "fp16", "w8a8", "w4a16")),
    ])
    text = (project / "out/digits_cnn/fp32/convert.config.json").read_text()
    assert text == json.dumps(json.loads(text), sort_keys=True, indent=1) + "\n"

    # Unchanged content is not rewritten (timestamps stay, nothing rebuilds).
    stamps = {p: p.stat().st_mtime_ns for p in paths}
    for p in paths:
        p.touch()
        stamps[p] = p.stat().st_mtime_ns
    write_step_configs(resolve(load(), project), project / "out")
    assert all(p.stat().st_mtime_ns == stamps[p] for p in paths)

    # Another checkout at another path writes the same bytes.
    other = tmp_path_factory.mktemp("other_checkout")
    shutil.copytree(project / "models", other / "models")
    other_paths = write_step_configs(resolve(load_spec(other / SPEC, CONFIGS), other), other / "out")
    assert [p.read_bytes() for p in other_paths] == [p.read_bytes() for p in paths]


def test_minimal_spec_takes_defaults(project):
    shutil.copy(FIXTURES / "minimal.yaml", project / "models/tiny.yaml")
    spec = load("models/tiny.yaml")
    assert (spec.name, spec.precisions, spec.targets) == ("tiny", ["fp32"], [("cpu", "x86_64-linux")])
    assert spec.outputs == [] and spec.calibration is None and spec.test is None
    resolved = resolve(spec, project)
    assert list(resolved.convert) == ["fp32"] and resolved.test == {}


@pytest.mark.parametrize("old, new, check", [
    ("precisions: [fp32, fp16, int8, int4]", "precisions: [Int4, FP16]", lambda s: s.precisions == ["w4a16", "fp16"]),
    ("precisions: [fp32, fp16, int8, int4]", "precisions: int4", lambda s: s.precisions == ["w4a16"]),
    ("targets: cpu", "targets: [cpu@x86_64-linux]", lambda s: s.targets == [("cpu", "x86_64-linux")]),
    ("outputs: [logits]", "outputs: logits", lambda s: s.outputs == ["logits"]),
    ("cosine: 0.99", "rel_err: 1e-3", lambda s: s.test["thresholds"]["fp16"]["rel_err"] == 0.001),
    ("w8a8: {sqnr_db: 20}", "int8: {top1: null}", lambda s: "top1" not in s.test["thresholds"]["w8a8"]),
    ("calibration: digits_cnn/calibration.npz", "calibration: digits_cnn/list.txt",
     lambda s: s.calibration.name == "list.txt"),
])
def test_valid_variants(project, old, new, check):
    (project / "models/digits_cnn/list.txt").write_text("digits_cnn/image0.raw\n")
    edit(project, old, new)
    assert check(load())


def test_a_precision_the_npu_cannot_run_is_left_out_of_its_matrix(project):
    edit(project, "targets: cpu", "targets: [cpu, npu]")
    resolved = resolve(load(), project)
    assert resolved.slots["npu"] == {"backend": "npu", "target": "x86_64-linux", "available": True}
    assert ("w8a8", "npu") in resolved.test and ("fp16", "npu") in resolved.test
    assert ("fp32", "cpu") in resolved.test and ("fp32", "npu") not in resolved.test


def test_an_htp_slot_names_a_soc_and_its_tests_cap_their_samples(project):
    edit(project, "targets: cpu", "targets: [cpu, htp@x-elite, htp@8-elite]")
    edit(project, "samples: 200", "samples: 200\n  htp_samples: 20")
    edit(project, "test:", "skip: {htp@8-elite: {int8: not on this phone}}\ntest:")
    spec = load()
    assert spec.targets == [("cpu", "x86_64-linux"), ("htp", "x-elite"), ("htp", "8-elite")]
    resolved = resolve(spec, project)
    assert resolved.slots["htp@x-elite"] == {"backend": "htp", "target": "x-elite", "available": True}
    assert list(resolved.model_lib) == ["x86_64-linux"]  # contexts for SoCs are prepared on the host
    assert all(config["qdq"] for config in resolved.convert.values())  # model.qdq.onnx: what the htp reads
    assert resolved.test[("w8a8", "htp@x-elite")]["samples"] == 20 and resolved.test[("w8a8", "cpu")]["samples"] == 200
    assert resolved.test[("fp16", "htp@x-elite")]["samples"] == 20
    assert ("fp32", "htp@x-elite") not in resolved.test  # the HTP has no fp32
    assert ("w8a8", "htp@8-elite") not in resolved.test and spec.skip_reason("w8a8", "htp@8-elite") == "not on this phone"


def test_a_backends_own_test_keys_come_from_its_yaml(project, tmp_path):
    """test.<backend>_<setting> exists for the settings a backend declares (its yaml's `test`), with
    their defaults: the htp's (htp_samples, htp_thresholds) and any other's, with no schema edit."""
    edit(project, "targets: cpu", "targets: [cpu, npu, htp]")
    edit(project, "samples: 200", "samples: 200\n  htp_thresholds: {int8: {sqnr_db: 9}}")
    resolved = resolve(load(), project)
    assert resolved.test[("w8a8", "htp@x-elite")] == {**resolved.test[("w8a8", "cpu")], "samples": 50,  # htp.yaml's cap
                                              "thresholds": {"sqnr_db": 9, "top1": 0.9, "cosine": 0.99}}
    assert resolved.test[("w8a8", "npu")] == resolved.test[("w8a8", "cpu")]
    configs = tmp_path / "configs"
    shutil.copytree(CONFIGS, configs)
    npu = configs / "backends" / "npu.yaml"
    npu.write_text(npu.read_text() + "test:\n  samples: 3\n  thresholds: {w8a8: {sqnr_db: 12}}\n")
    edit(project, "samples: 200", "samples: 200\n  npu_thresholds: {int8: {max_abs: 0.5}}")
    npu_test = resolve(load_spec(SPEC, configs), project).test[("w8a8", "npu")]
    assert npu_test["samples"] == 3 and npu_test["thresholds"] == {"sqnr_db": 12, "top1": 0.9, "cosine": 0.99, "max_abs": 0.5}
    assert resolve(load_spec(SPEC, configs), project).test[("w8a8", "cpu")]["thresholds"]["sqnr_db"] == 20


def test_a_new_backends_own_kind_of_place_is_checked_by_the_schema_in_its_yaml(project, tmp_path):
    """A backend placing on something new (here boards of configs/boards/) brings its files' schema
    in its own yaml (placement_schema): no edit of the package's schemas."""
    configs = tmp_path / "configs"
    shutil.copytree(CONFIGS, configs)
    (configs / "backends" / "dsp.yaml").write_text(
        "name: dsp\ndescription: a board's DSP\navailable: true\nprecisions: [w8a8]\nplacements: boards\n"
        "default_placement: tiny\nplacement_schema:\n  type: object\n  required: [name, cores]\n"
        "  properties:\n    name: {type: string}\n    cores: {type: integer, minimum: 1}\n")
    (configs / "boards").mkdir()
    (configs / "boards" / "tiny.yaml").write_text("name: tiny\ncores: 2\n")
    edit(project, "targets: cpu", "targets: [cpu, dsp]")
    assert load_spec(SPEC, configs).targets == [("cpu", "x86_64-linux"), ("dsp", "tiny")]
    (configs / "boards" / "tiny.yaml").write_text("name: tiny\ncores: none\n")
    with pytest.raises(SpecError, match=r"boards/tiny.yaml:2: cores: expected an integer, got a string$"):
        load_spec(SPEC, configs)
    dsp = configs / "backends" / "dsp.yaml"
    dsp.write_text(dsp.read_text().split("placement_schema")[0])
    with pytest.raises(SpecError, match=r"backends/dsp.yaml:5: placements: no kind of place 'boards' \(known: "
                                        r"targets, socs\); give its files' JSON Schema as placement_schema$"):
        load_spec(SPEC, configs)


# -- bad specs: exact file:line: key: message ---------------------------------------------------

BAD = [
    ("yaml syntax", "name: digits_cnn", "name: digits: cnn",
     "models/digits_cnn.yaml:2: YAML syntax error: mapping values are not allowed here"),
    ("unknown key", "precisions:", "precisons:",
     "models/digits_cnn.yaml:8: precisons: unknown key; did you mean 'precisions'?"),
    ("unknown nested key", "    cosine: 0.99", "    cosin: 0.99",
     "models/digits_cnn.yaml:18: test.thresholds.cosin: unknown key; did you mean 'cosine'?"),
    ("wrong type", "samples: 200", "samples: many",
     "models/digits_cnn.yaml:16: test.samples: expected an integer or null, got a string"),
    ("wrong type of list", "targets: cpu", "targets: {cpu: 1}",
     "models/digits_cnn.yaml:9: targets: expected a name or a list of names, got a mapping"),
    ("bad shape", "[1, 1, 8, 8]", "[1, 1, 8, -8]",
     "models/digits_cnn.yaml:5: inputs.image[3]: must be >= 1, got -8"),
    ("value shape", "value: 0.5", "value: [0.5, 1]",
     "models/digits_cnn.yaml:6: inputs.scale.value: has shape [2] but the input's shape is [1]"),
    ("missing source key", "source: digits_cnn/model.onnx\n", "",
     "models/digits_cnn.yaml:2: source: missing required key"),
    ("missing test data key", "  data: digits_cnn/test.npz\n", "",
     "models/digits_cnn.yaml:13: test.data: missing required key"),
    ("missing source file", "digits_cnn/model.onnx", "digits_cnn/missing.onnx",
     "models/digits_cnn.yaml:3: source: file not found: models/digits_cnn/missing.onnx "
     "(paths are relative to the spec file)"),
    ("missing calibration file", "digits_cnn/calibration.npz", "digits_cnn/nope.npz",
     "models/digits_cnn.yaml:10: calibration: file not found: models/digits_cnn/nope.npz "
     "(paths are relative to the spec file)"),
    ("no calibration for quantized", "calibration: digits_cnn/calibration.npz\n", "",
     "models/digits_cnn.yaml:8: precisions[2]: w8a8 is quantized and needs calibration data: "
     "add `calibration:` (an .npz, or a qnn-net-run input_list .txt)"),
    ("invalid precision", "int4]", "w8a9]",
     "models/digits_cnn.yaml:8: precisions[3]: unknown precision 'w8a9'; did you mean 'w8a8'? "
     "(known: fp32, fp16, w8a8, w8a16, w16a16, w4a8, w4a16)"),
    ("precision twice via alias", "int4]", "w8a8]",
     "models/digits_cnn.yaml:8: precisions[3]: w8a8 is already listed (as 'int8')"),
    ("fp32 on npu only", "targets: cpu", "targets: npu",
     "models/digits_cnn.yaml:8: precisions[0]: fp32 cannot run on npu: "
     "the npu has no fp32 unit; use fp16 or a quantized precision"),
    ("unknown target", "targets: cpu", "targets: cpu@arm64",
     "models/digits_cnn.yaml:9: targets: unknown target 'arm64' (known: aarch64-linux, "
     "aarch64-windows, x86_64-linux, x86_64-windows; see configs/targets/)"),
    ("unknown soc", "targets: cpu", "targets: [cpu, htp@x-elit]",
     "models/digits_cnn.yaml:9: targets[1]: unknown place for htp 'x-elit'; did you mean 'x-elite'? "
     "(known: 8-elite, 8-gen1, 8-gen2, 8-gen3, x-elite, x2-elite; see configs/socs/)"),
    ("skip of a target not listed", "test:", "skip: {npu: {fp16: why}}\ntest:",
     "models/digits_cnn.yaml:13: skip.npu: 'npu' is not a backend or slot of targets (they are: cpu)"),
    ("block_size without 4-bit", "int4]", "w8a16]",
     "models/digits_cnn.yaml:12: quantization.block_size: only applies to 4-bit weights (w4a8, w4a16), "
     "and precisions has none; remove it or set it to null"),
    ("bad enum", "block_size: 32", "act_range: minmx",
     "models/digits_cnn.yaml:12: quantization.act_range: expected one of 'minmax', 'percentile', 'mse', 'search', 'auto'; "
     "got 'minmx'; did you mean 'minmax'?"),
    ("bad weight rounding", "block_size: 32", "weight_rounding: adaround",
     "models/digits_cnn.yaml:12: quantization.weight_rounding: expected one of 'nearest', 'gptq', 'auto'; got 'adaround'"),
    ("labels key not in data", "labels: labels", "labels: label",
     "models/digits_cnn.yaml:15: test.labels: models/digits_cnn/test.npz has no array for labels 'label' "
     "(it holds: image, labels)"),
    ("unknown precision in thresholds", "w8a8: {sqnr_db: 20}", "w8a9: {sqnr_db: 20}",
     "models/digits_cnn.yaml:20: test.precision_thresholds.w8a9: unknown precision 'w8a9'; "
     "did you mean 'w8a8'? (known: fp32, fp16, w8a8, w8a16, w16a16, w4a8, w4a16)"),
    ("thresholds twice via alias", "w8a8: {sqnr_db: 20}", "w8a8: {sqnr_db: 20}\n    int8: {top1: 0.5}",
     "models/digits_cnn.yaml:21: test.precision_thresholds.int8: thresholds for w8a8 are given twice"),
    ("bad name", "name: digits_cnn", "name: digits cnn",
     "models/digits_cnn.yaml:2: name: expected a name of letters, digits, '_', '.' and '-', got 'digits cnn'"),
    ("a backend's own key out of range", "samples: 200", "samples: 200\n  htp_samples: 0",
     "models/digits_cnn.yaml:17: test.htp_samples: must be >= 1, got 0"),
    ("a key no backend declares", "samples: 200", "samples: 200\n  npu_samples: 2",
     "models/digits_cnn.yaml:17: test.npu_samples: unknown key; did you mean 'htp_samples'?"),
    ("unknown precision in a backend's thresholds", "samples: 200", "samples: 200\n  htp_thresholds: {w16a61: {}}",
     "models/digits_cnn.yaml:17: test.htp_thresholds.w16a61: unknown precision 'w16a61'; did you mean 'w16a16'? "
     "(known: fp32, fp16, w8a8, w8a16, w16a16, w4a8, w4a16)"),
    ("duplicate key", "  samples: 200", "  samples: 200\n  data: again.npz",
     "models/digits_cnn.yaml:17: test.data: duplicate key (first given on line 14)"),
]


@pytest.mark.parametrize("old, new, expected", [case[1:] for case in BAD], ids=[case[0] for case in BAD])
def test_bad_spec_reports_file_line_and_key(project, old, new, expected):
    edit(project, old, new)
    with pytest.raises(SpecError) as caught:
        load()
    assert str(caught.value) == expected
    assert isinstance(caught.value, QnnBuildError) and "\n" not in str(caught.value)


def test_empty_file(project):
    (project / SPEC).write_text("# nothing yet\n")
    with pytest.raises(SpecError, match=r"^models/digits_cnn.yaml:1: the file is empty"):
        load()


def test_duplicate_names_across_specs(project):
    shutil.copy(project / SPEC, project / "models/copy.yaml")
    edit(project, "# A valid spec", "# A copy\n#", spec="models/copy.yaml")  # moves `name:` to line 3
    with pytest.raises(SpecError) as caught:
        load_zoo([SPEC, "models/copy.yaml"], CONFIGS)
    assert str(caught.value) == ("models/copy.yaml:3: name: model name 'digits_cnn' is already used by "
                                 "models/digits_cnn.yaml:2; names must be unique")


def test_zoo_loads_every_spec_and_finds_configs_by_itself(project):
    shutil.copytree(CONFIGS, project / "configs")
    shutil.copy(FIXTURES / "minimal.yaml", project / "models/tiny.yaml")
    specs = load_zoo([SPEC, "models/tiny.yaml"])
    assert [s.name for s in specs] == ["digits_cnn", "tiny"]
    assert specs[0].configs.dir.resolve() == (project / "configs").resolve()


# -- a spec edit changes only the configs of the steps it affects --------------------------------


def changed_configs(project, old, new) -> set:
    before = resolve(load(), project)
    edit(project, old, new)
    after = resolve(load(), project)
    changed = set()
    for step in ("convert", "model_lib", "test"):
        b, a = getattr(before, step), getattr(after, step)
        changed |= {(step, key) for key in b.keys() | a.keys() if b.get(key) != a.get(key)}
    if before.release != after.release:
        changed.add(("release", None))
    return changed


def test_editing_test_thresholds_changes_only_test_configs(project):
    changed = changed_configs(project, "cosine: 0.99", "cosine: 0.98")
    assert changed == {("test", (p, "cpu")) for p in ("fp32", "fp16", "w8a8", "w4a16")}


def test_editing_precision_thresholds_changes_one_test_config(project):
    assert changed_configs(project, "{sqnr_db: 20}", "{sqnr_db: 21}") == {("test", ("w8a8", "cpu"))}


def test_editing_calibration_changes_only_quantized_convert_configs(project):
    shutil.copy(project / "models/digits_cnn/calibration.npz", project / "models/digits_cnn/calib2.npz")
    changed = changed_configs(project, "calibration.npz", "calib2.npz")
    assert changed == {("convert", "w8a8"), ("convert", "w4a16")}


def test_setting_weight_rounding_changes_only_quantized_convert_configs(project):
    changed = changed_configs(project, "block_size: 32", "block_size: 32\n  weight_rounding: gptq")
    assert changed == {("convert", "w8a8"), ("convert", "w4a16")}
    assert resolve(load(), project).convert["w8a8"]["weight_rounding"] == "gptq"


def test_editing_block_size_changes_only_4bit_convert_configs(project):
    assert changed_configs(project, "block_size: 32", "block_size: 64") == {("convert", "w4a16")}


# -- the schema file itself ----------------------------------------------------------------------


def test_schema_is_valid_draft_2020_12_and_accepts_the_fixtures():
    schema = load_schema("schema.json")
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    import yaml
    for fixture in FIXTURES.glob("*.yaml"):
        jsonschema.validate(yaml.safe_load(fixture.read_text()), schema)
