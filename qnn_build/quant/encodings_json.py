"""AIMET-format encodings JSON: written by every quantized conversion (model.encodings.json) and
read back as `--quantization-overrides` to pin encodings, or keep tensors at 16 bits or in fp16."""

import json
from pathlib import Path

import numpy as np

from ..atomic import write_text
from ..data.json_file import read_json_object
from ..errors import QnnBuildError
from ..ir.graph import Graph
from .encoding import Encoding, activation_encoding, fp16_encoding, headroom, symmetric_encoding
from .ranges import choose_range

VERSION = "0.6.1"
ACT_BITS = {8, 16}
PARAM_BITS = {4, 8, 16, 32}


def _entries(enc: Encoding) -> list[dict]:
    if enc.is_float:
        return [{"bitwidth": 16, "dtype": "float"}]
    out = []
    for s, o in zip(enc.scales, enc.offsets):
        # AIMET writes every encoding in its unsigned form: real = scale * (u + offset), u >= 0.
        offset = int(o) + enc.qmin
        entry = {"bitwidth": enc.bitwidth, "dtype": "int", "is_symmetric": str(enc.is_signed),
                 "min": float(s) * offset, "max": float(s) * (offset + enc.qmax - enc.qmin),
                 "offset": offset, "scale": float(s)}
        if enc.block_size:
            entry["block_size"] = enc.block_size
        out.append(entry)
    return out


def encodings_document(graph: Graph) -> dict:
    acts, params = {}, {}
    for name, t in sorted(graph.tensors.items()):
        if t.encoding is None:
            if t.is_const and t.dtype == np.float16:
                params[name] = [{"bitwidth": 16, "dtype": "float"}]
            continue
        (params if t.is_const else acts)[name] = _entries(t.encoding)
    return {"version": VERSION, "activation_encodings": acts, "param_encodings": params}


def write_encodings(path, graph: Graph) -> None:
    write_text(path, json.dumps(encodings_document(graph), indent=1, sort_keys=True) + "\n")


def load_overrides(path, graph: Graph) -> dict:
    """{"activations": {name: fn(stats, bits)}, "params": {name: fn(values, bits)}} from an AIMET file."""
    path = Path(path)
    doc = read_json_object(path, "quantization overrides file", "a JSON object with activation_encodings/param_encodings")
    out = {"activations": {}, "params": {}}
    for section, kind in (("activation_encodings", "activations"), ("param_encodings", "params")):
        for name, entries in (doc.get(section) or {}).items():
            t = graph.tensors.get(name)
            if t is None or t.is_const != (kind == "params"):
                what = "an activation" if kind == "activations" else "a parameter"
                raise QnnBuildError(f"{path}: {section}: tensor '{name}' is not {what} of the model")
            if isinstance(entries, dict):
                entries = [entries]
            out[kind][name] = _override(path, section, name, entries, kind)
    return out


def _override(path, section, name, entries, kind):
    where = f"{path}: {section}: '{name}'"
    if not entries or not all(isinstance(e, dict) for e in entries):
        raise QnnBuildError(f"{where}: expected a list of encoding objects")
    first = entries[0]
    dtype = str(first.get("dtype", "int"))
    bits = first.get("bitwidth")
    if dtype == "float":
        if bits not in (None, 16):
            raise QnnBuildError(f"{where}: float encodings must be 16-bit, got {bits}")
        return lambda *_: fp16_encoding()
    allowed = ACT_BITS if kind == "activations" else PARAM_BITS
    if bits is not None and bits not in allowed:
        raise QnnBuildError(f"{where}: unsupported bitwidth {bits} (supported: {sorted(allowed)})")
    if all("scale" in e and "offset" in e for e in entries):
        scales = np.array([float(e["scale"]) for e in entries], np.float32)
        offsets = np.array([int(e["offset"]) for e in entries], np.int32)
        signed = str(first.get("is_symmetric", "False")).lower() == "true"
        if kind == "activations" and len(entries) != 1:
            raise QnnBuildError(f"{where}: activations take one encoding, got {len(entries)}")
        if signed:
            offsets = np.zeros_like(offsets)
        return lambda values, default_bits: Encoding(int(bits or default_bits), signed, scales, offsets,
                                                     axis=-1 if len(scales) == 1 else 0)
    if all("min" in e and "max" in e for e in entries) and kind == "activations":
        lo, hi = float(first["min"]), float(first["max"])
        return lambda stats, default_bits: activation_encoding(lo, hi, int(bits or default_bits))
    if kind == "activations":
        def from_stats(stats, default_bits):
            b = int(bits or default_bits)
            if stats is None:
                raise QnnBuildError(f"{where}: no calibration statistics for this tensor")
            lo, hi = headroom(*choose_range(stats.min, stats.max, stats.hist, b, "minmax"), b)  # (3c)
            return activation_encoding(lo, hi, b)
        return from_stats
    return lambda values, default_bits: symmetric_encoding(np.array([np.abs(values).max()]), int(bits or default_bits))
