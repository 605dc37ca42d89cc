"""Every option of the steps, declared once, and the precisions with their aliases.

An Option is one row: its name (the key of a step's --config file and of the Python keyword), its
command-line flags, how a value is parsed, the values allowed, the default and the help. The CLI's
argparse (cli.py), the spec's JSON schemas (spec/validate.py fills their `quantization` entries from
QUANTIZATION), the spec resolution (spec/resolve.py writes convert's --config from it) and the
quantizer's QuantOptions (its defaults) all read these rows; tests/test_options.py holds them equal.

Adding an option: one row here and its name in the steps that take it (STEPS in cli.py).
"""

import json
from dataclasses import dataclass, replace
from typing import Any, Callable

from .errors import QnnBuildError


# ---- precisions -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Precision:
    name: str
    weight_bits: int | None  # None: float
    act_bits: int | None
    aliases: tuple[str, ...] = ()

    @property
    def is_quantized(self) -> bool:
        return self.weight_bits is not None

    @property
    def param_bits(self) -> int:
        """Bits of constants other than conv/matmul weights: 4-bit applies to weights only."""
        return max(self.weight_bits or 0, 8)


# `wWaA`: W-bit weights, A-bit activations. The one table of names and aliases (configs/precisions.yaml
# adds the zoo's thresholds and availability per name).
PRECISIONS = {p.name: p for p in [
    Precision("fp32", None, None, ("float32", "float")), Precision("fp16", None, None, ("float16", "half")),
    Precision("w8a8", 8, 8, ("int8",)), Precision("w8a16", 8, 16), Precision("w16a16", 16, 16, ("int16",)),
    Precision("w4a8", 4, 8), Precision("w4a16", 4, 16, ("int4",)),
]}
ALIASES = {alias: p.name for p in PRECISIONS.values() for alias in p.aliases}


def parse_precision(text: str) -> Precision:
    """'int8' -> w8a8, 'FP16' -> fp16; a QnnBuildError naming every spelling for anything else."""
    key = ALIASES.get(str(text).lower(), str(text).lower())
    if key not in PRECISIONS:
        raise QnnBuildError(f"unknown precision '{text}' (one of {', '.join(spellings())})")
    return PRECISIONS[key]


def spellings() -> list[str]:
    return [n for p in PRECISIONS.values() for n in (p.name, *p.aliases)]


# ---- options ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Option:
    """One option. `name` is its --config key and its argparse dest; `flags` its command-line
    spellings (default `--name` with dashes; none: positional). kind: "value" (one value), "switch"
    (a flag that sets True), "repeat" (a value per use, a list), "pairs" (NAME VALUE per use, a
    mapping; `type` parses VALUE) or "keyvalue" (KEY=VALUE per use, a mapping)."""
    name: str
    help: str
    flags: tuple[str, ...] | None = None
    kind: str = "value"
    type: Callable = str
    choices: tuple | None = None
    default: Any = None
    metavar: str | tuple | None = None
    spec_key: str | None = None       # its key in a spec's `quantization:` (and QuantOptions), if any
    negates_spec: bool = False        # the flag is the spec key's negation (--per-tensor vs per_channel)
    bounds: tuple | None = None       # (minimum, maximum) of a number, for the spec schema
    relevant: Callable | None = None  # (spec quantization, precision) -> whether convert's config needs it
    spec_help: str | None = None      # its description as a spec key, where the flag's reads otherwise

    def but(self, **changes) -> "Option":
        """This option as one step words or defaults it differently."""
        return replace(self, **changes)

    @property
    def cli_flags(self) -> tuple[str, ...]:
        return ("--" + self.name.replace("_", "-"),) if self.flags is None else self.flags

    def from_spec(self, value):
        """The spec's value as this option's (the flag's) value."""
        return (not value) if self.negates_spec else value

    def to_spec(self, value):
        return (not value) if self.negates_spec and value is not None else value

    def schema(self) -> dict:
        """The JSON Schema of its spec key."""
        out = {"description": self.spec_help or self.help}
        if self.choices is not None:
            out["enum"] = list(self.choices) + ([None] if self.default is None else [])
        elif self.kind == "switch":
            out["type"] = "boolean"
        elif self.type in (int, float):
            out["type"] = "number" if self.type is float else "integer"
        else:
            out["type"] = ["string", "null"] if self.default is None else "string"
            out["minLength"] = 1
        if self.bounds:
            out["minimum"], out["maximum"] = self.bounds
        return out


def json_value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"invalid JSON: {e.msg}") from None


def dims(text: str) -> list[int]:
    try:
        return [int(d) for d in text.replace("x", ",").split(",") if d.strip()]
    except ValueError:
        raise ValueError(f"'{text}' is not a comma-separated list of integers") from None


def count(text: str) -> int:
    """A count (inferences, threads, samples): a whole number, 1 or more."""
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise ValueError(f"must be at least 1, not {value}")
    return value


def numbers(text: str):
    """'16000' -> 16000, '0.5,1' -> [0.5, 1]: one number or a list."""
    try:
        vals = [float(v) for v in text.split(",")]
    except ValueError:
        raise ValueError(f"'{text}' is not a comma-separated list of numbers") from None
    vals = [int(v) if v.is_integer() else v for v in vals]
    return vals[0] if len(vals) == 1 else vals


# The quantizer's options: convert's flags, a spec's `quantization:` keys (configs/precisions.yaml may
# set zoo-wide values), QuantOptions' fields. `default` is the one default of each.
QUANTIZATION = [
    Option("act_range", "activation range algorithm (search: each range scored by the output error on the "
           "calibration samples; auto: the fixed method that scores best)",
           choices=("minmax", "percentile", "mse", "search", "auto"), default="auto", spec_key="act_range"),
    Option("weight_range", "weight range algorithm", choices=("minmax", "mse"), default="minmax",
           spec_key="weight_range"),
    Option("weight_rounding", "nearest, gptq: error feedback over the calibration inputs of each layer "
           "(docs/quantization.md (17)-(20)), or auto: gptq where calibration samples are given",
           choices=("nearest", "gptq", "auto"), default="auto", spec_key="weight_rounding"),
    Option("fast", "plain minmax ranges and nearest rounding where act_range or weight_rounding is auto "
           "(nothing scored, no GPTQ)", kind="switch", default=False, spec_key="fast",
           relevant=lambda q, p: q["fast"]),
    Option("percentile", "percentile of act_range percentile", type=float, default=99.99, spec_key="percentile",
           bounds=(50, 100), relevant=lambda q, p: q["act_range"] == "percentile"),
    Option("per_tensor", "one weight scale per tensor", flags=("--per-tensor",), kind="switch", default=False,
           spec_key="per_channel", negates_spec=True,
           spec_help="one scale per output channel of each weight (false: one per tensor, --per-tensor)"),
    Option("block_size", "block-wise scales of 4-bit weights, this many per block", type=int, choices=(32, 64, 128),
           spec_key="block_size", relevant=lambda q, p: p.weight_bits == 4),
    Option("cle", "cross-layer equalization", kind="switch", default=False, spec_key="cle"),
    Option("bias_correction", "correct biases for the weights' rounding error (docs/quantization.md (12))",
           kind="switch", default=False, spec_key="bias_correction"),
    Option("recurrent_bits", "bits of unrolled LSTM/GRU/RNN activations and weights, never fewer than the "
           "precision's (8: the precision's)", type=int, choices=(8, 16), default=16, spec_key="recurrent_bits"),
    Option("quantization_overrides", "an AIMET encodings JSON pinning tensors' encodings", metavar="FILE",
           spec_key="overrides", relevant=lambda q, p: q["overrides"] is not None),
]

_path = dict(metavar="FILE")
OPTIONS = {o.name: o for o in QUANTIZATION + [
    Option("source", "the .onnx model", flags=()),
    Option("output", "the file to write", flags=("-o", "--output")),
    Option("output_dir", "the folder to write into", flags=("-o", "--output-dir")),
    Option("input_dims", "pin an input's shape, e.g. --input-dim image 1,3,224,224 (repeatable)",
           flags=("--input-dim",), kind="pairs", type=dims, metavar=("NAME", "DIMS")),
    Option("input_values", "pin an input to a constant, e.g. --input-value sample_rate 16000 (repeatable)",
           flags=("--input-value",), kind="pairs", type=numbers, metavar=("NAME", "VALUE")),
    Option("out_nodes", "use this tensor as an output (repeatable; default: the model's outputs)",
           flags=("--out-node",), kind="repeat", metavar="NAME"),
    Option("precision", "refuse a model converted at another precision (" + ", ".join(spellings()) + ")"),
    Option("calibration", "calibration data: a qnn-net-run input list or an .npz (key = input name, [N, *shape])",
           flags=("--input-list", "--calibration"), **_path),
    Option("calibration_stats", "statistics from `qnn-build calibrate` (skips running the model)", **_path),
    Option("float_fallback", "keep nodes the npu has no integer kernel for in fp16 (boundary Quantize/Dequantize "
           "inserted); listed in model.json under float_fallback", kind="switch", default=False),
    Option("qdq", "also write model.qdq.onnx: the converted graph with QuantizeLinear/DequantizeLinear at its "
           "encodings (what the htp backend reads; docs/formats.md)", kind="switch", default=False),
    Option("target", "the machine it runs on: a configs/targets/ name, e.g. aarch64-windows (default: this one)"),
    Option("backend", "the backend: a configs/backends/ name (default cpu)", default="cpu"),
    Option("model", "the model library (libmodel.so)"),
    Option("retrieve_context", "run from this context binary instead of --model", metavar="CTX"),
    Option("runtime", "the runtime library (default: built from the package's sources)"),
    Option("threads", "threads for the backend", type=count, default=1),
    Option("data", "test data .npz: one key per input, arr[i] = one input"),
    Option("samples", "use at most this many samples (default: all)", type=count),
    Option("json", "print JSON instead of text", kind="switch", default=False),
]}
