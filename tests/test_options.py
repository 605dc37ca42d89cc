"""Each option declared once (qnn_build/options.py): the CLI's flags, the spec schemas, the spec
resolution, QuantOptions and configs/ all read the one table, and the one table of precision names
and aliases serves the spec and the steps alike."""

import dataclasses
import json

import pytest
from cli_util import qnn_build

from qnn_build.cli import COMMON, STEPS, build_parser, step_options
from qnn_build.options import ALIASES, OPTIONS, PRECISIONS, QUANTIZATION, parse_precision
from qnn_build.quant import QuantOptions
from qnn_build.spec.configs import package_configs
from qnn_build.spec.validate import load_schema


def test_quantoptions_are_the_tables_quantizer_options_with_its_defaults():
    by_key = {o.spec_key: o for o in QUANTIZATION}
    fields = dataclasses.fields(QuantOptions)
    assert {f.name for f in fields} <= set(by_key)
    assert {f.name: f.default for f in fields} == {f.name: by_key[f.name].to_spec(by_key[f.name].default) for f in fields}
    assert QuantOptions().per_channel is True and OPTIONS["per_tensor"].default is False


def test_the_schemas_take_the_quantization_keys_from_the_table():
    spec_keys = load_schema("schema.json")["properties"]["quantization"]["properties"]
    assert spec_keys == {o.spec_key: o.schema() for o in QUANTIZATION}
    assert spec_keys["act_range"]["enum"] == ["minmax", "percentile", "mse", "search", "auto"]
    assert spec_keys["block_size"]["enum"] == [32, 64, 128, None]
    zoo_keys = load_schema("configs.schema.json")["$defs"]["precisions"]["properties"]["quantization"]["properties"]
    assert set(zoo_keys) == set(spec_keys) - {"overrides"}


def test_the_zoo_defaults_are_the_tables():
    assert package_configs().quantization_defaults == {o.spec_key: o.to_spec(o.default) for o in QUANTIZATION}


def test_every_flag_is_an_option_of_the_table_or_of_its_step():
    parser = build_parser()
    steps = parser._subparsers._group_actions[0].choices
    for name, step in STEPS.items():
        dests = {a.dest for a in steps[name]._actions} - {"help"} - {o.name for o in COMMON}
        assert dests == {o.name for o in step_options(step)}, name
    convert = {a.dest: a for a in steps["convert"]._actions}
    for o in QUANTIZATION:  # the quantizer's options reach convert as the table declares them
        assert tuple(convert[o.name].choices or ()) == tuple(o.choices or ())
        assert convert[o.name].option_strings == list(o.cli_flags)


@pytest.mark.parametrize("text", ["float", "half", "FP16", "int8", "int4", "float32"])
def test_one_alias_table_for_the_spec_and_the_steps(text):
    """spec/configs.py once accepted float/half while the steps did not."""
    assert package_configs().canonical_precision(text) == parse_precision(text).name


def test_configs_precisions_are_the_tables_and_say_their_bits():
    configs = package_configs()
    assert list(configs.precisions) == list(PRECISIONS)
    assert configs.precisions["w4a16"]["weight_bits"] == 4 and configs.precisions["w4a16"]["kind"] == "quantized"
    assert set(configs.precisions["fp16"]["aliases"]) == {a for a, p in ALIASES.items() if p == "fp16"}


def test_a_config_key_per_tensor_and_the_spec_key_per_channel_are_one_option(tmp_path):
    """The build writes convert's --config from a spec's per_channel; convert reads it back as one
    QuantOptions field."""
    from qnn_build.cli import _finish
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"per_tensor": True, "act_range": "mse"}))
    args = build_parser().parse_args(["convert", "--config", str(config)])
    _finish(args)
    assert (args.per_tensor, args.act_range, args.recurrent_bits, args.precision) == (True, "mse", 16, None)
    assert OPTIONS["per_tensor"].to_spec(args.per_tensor) is False


def test_a_bad_pair_value_names_the_flag_and_the_input():
    r = qnn_build("convert", "m.onnx", "-o", "out", "--input-dim", "image", "1,a,3")
    assert r.returncode == 2 and "--input-dim image: '1,a,3' is not a comma-separated list of integers" in r.stderr
