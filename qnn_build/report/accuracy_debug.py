"""`qnn-build accuracy-debug`: where along the graph a built model loses accuracy (as QNN's
accuracy debugger). onnxruntime runs the source model in float with every float tensor exposed; the
built variant (a model library or context binary at some precision, on the cpu's simulation or the
npu) runs the same samples keeping every activation; each tensor both hold is compared over all
samples (report/metrics.py's SQNR, max abs error, cosine), with its encoding's range against the
range the float model shows there and the fraction of float values the encoding clips; an attention
mask's fills (-inf, finfo.min) are left out of both.

The jump of a layer is the SQNR it loses: the lowest SQNR among the compared tensors it reads (through
tensors the build folded away, back to those they come from) minus the SQNR of what it writes. The first layer whose jump reaches `jump_db` is where the error starts;
the layers are also ranked by jump, largest first, so a tensor given a bad encoding (say a bad
quantization override) is named by its own layer even when the error it causes travels on.
"""

import json
import math
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

import numpy as np

from ..atomic import write_text
from ..data.npz import open_npz, sample, sample_count
from ..errors import QnnBuildError
from ..ir.mask_select import fill_values
from ..runtime.binding import Model
from ..runtime.ctx_info import tensor_encodings
from .metrics import SQNR_CAP_DB, short
from .reference import _ORT_DTYPES, _constant, _session
from .svg import line_chart

JUMP_DB = 15.0


@dataclass
class _Sums:
    """One tensor's comparison, accumulated sample by sample (nothing kept per sample)."""
    signal: float = 0.0
    noise: float = 0.0
    dot: float = 0.0
    norm_a: float = 0.0
    max_abs: float = 0.0
    ref_min: float = math.inf
    ref_max: float = -math.inf
    clipped: int = 0
    count: int = 0
    shape: list = field(default_factory=list)

    def add(self, a: np.ndarray, b: np.ndarray, limits) -> None:
        a, b = a.astype(np.float64).reshape(-1), b.astype(np.float64).reshape(-1)
        # An attention mask's "never" (-inf, finfo.min) is held as the lowest code (docs/quantization.md
        # (3d)): not a value to compare, and -inf would make the noise infinite.
        kept = ~fill_values(b)
        a, b = a[kept], b[kept]
        d = a - b
        self.signal += float(b @ b)
        self.noise += float(d @ d)
        self.dot += float(a @ b)
        self.norm_a += float(a @ a)
        self.max_abs = max(self.max_abs, float(np.max(np.abs(d))) if d.size else 0.0)
        if b.size:
            self.ref_min, self.ref_max = min(self.ref_min, float(b.min())), max(self.ref_max, float(b.max()))
        if limits is not None:
            lo, hi, step = limits
            self.clipped += int(np.count_nonzero((b < lo - step / 2) | (b > hi + step / 2)))
        self.count += b.size

    def metrics(self) -> dict:
        if self.noise == 0.0:
            sqnr = SQNR_CAP_DB
        elif self.signal == 0.0:
            sqnr = -SQNR_CAP_DB
        else:
            sqnr = max(-SQNR_CAP_DB, min(SQNR_CAP_DB, 10 * math.log10(self.signal / self.noise)))
        norms = math.sqrt(self.signal * self.norm_a)
        cosine = 1.0 if norms == 0.0 and self.noise == 0.0 else (self.dot / norms if norms else 0.0)
        return {"sqnr_db": round(sqnr, 3), "max_abs": float(f"{self.max_abs:.6g}"), "cosine": round(cosine, 6),
                "observed": {"min": float(f"{self.ref_min:.6g}"), "max": float(f"{self.ref_max:.6g}")},
                "clipped": round(self.clipped / self.count, 6) if self.count else 0.0}


def _limits(enc: dict | None):
    """(lowest, highest, step) an integer encoding represents: real = scale * (q + offset)."""
    if not enc or "scale" not in enc or len(enc["scale"]) != 1:
        return None
    scale, offset, bits = enc["scale"][0], enc["offset"][0], enc["bitwidth"]
    qmin, qmax = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if enc["signed"] else (0, (1 << bits) - 1)
    return scale * (qmin + offset), scale * (qmax + offset), scale


def _real(value: np.ndarray, enc: dict | None) -> np.ndarray | None:
    """An activation as the variant holds it, in real numbers (the npu holds integer codes)."""
    if value.dtype.kind == "f":
        return value
    limits = _limits(enc)
    if limits is None:
        return None  # an integer tensor of the model itself (indices, shapes): not compared
    return enc["scale"][0] * (value.astype(np.float64) + enc["offset"][0])


def _float_tensors(source: Path) -> list[tuple[str, str, str, list[str]]]:
    """(node name, op, output tensor, input tensors) for every float node output, in graph order."""
    import onnx

    model = onnx.shape_inference.infer_shapes(onnx.load(str(source)))
    known = {v.name: v.type.tensor_type.elem_type for v in (*model.graph.value_info, *model.graph.output)}
    return [(node.name or out, node.op_type, out, list(node.input)) for node in model.graph.node for out in node.output
            if out and known.get(out) == onnx.TensorProto.FLOAT]


def _grouped_with_activation(layers, encodings) -> dict[str, str]:
    """A tensor read only by a Relu or Clip that shares its encoding is quantized as that activation's
    output (a Conv + Relu group: the Conv's output is never held unclipped), so the float tensor to
    compare it with is the activation's output: tensor -> that output."""
    readers: dict[str, list] = {}
    for _, op, out, inputs in layers:
        for name in inputs:
            readers.setdefault(name, []).append((op, out))
    return {name: r[0][1] for name, r in readers.items()
            if len(r) == 1 and r[0][0] in ("Relu", "Clip") and encodings.get(name) is not None
            and encodings.get(name) == encodings.get(r[0][1])}


def accuracy_debug(source, data, model=None, context=None, backend: str = "cpu", runtime=None, input_values=None,
                   samples: int | None = None, jump_db: float = JUMP_DB) -> dict:
    source = Path(source)
    layers = _float_tensors(source)
    session, names = _session(source, [out for _, _, out, _ in layers])
    variant = Model(model, backend=backend, runtime=runtime, keep_tensors=True, context=context)
    with variant:
        encodings = tensor_encodings(variant.context_binary())
        grouped = _grouped_with_activation(layers, encodings)
        store = open_npz(data, "test data")
        count = sample_count(store, [i.name for i in variant.inputs], samples, data)
        pinned = {i.name: _constant(i, value, None) for i in session.get_inputs()
                  for name, value in (input_values or {}).items() if i.name == name}
        ort_types = {i.name: _ORT_DTYPES.get(i.type, np.float32) for i in session.get_inputs()}
        sums: dict[str, _Sums] = {}
        for k in range(count):
            feeds = {i.name: sample(store, i.name, k, i.shape, data).astype(i.dtype, copy=False) for i in variant.inputs}
            reference = dict(zip(names, session.run(names, {**pinned, **{n: v.astype(ort_types.get(n, np.float32))
                                                                          for n, v in feeds.items()}})))
            reference.update({n: v.astype(np.float32) for n, v in feeds.items()})  # graph inputs, as fed
            variant.run(feeds)
            for name, value in variant.tensors(float_only=False).items():
                ref = reference.get(grouped.get(name, name))
                real = _real(value, encodings.get(name)) if ref is not None else None
                if real is None or real.size != ref.size:
                    continue
                sums.setdefault(name, _Sums(shape=list(ref.shape))).add(real, ref, _limits(encodings.get(name)))
    if not sums:
        raise QnnBuildError(f"{source}: no tensor of the source model is also a tensor of the built model")
    return _report(source, model or context, backend, count, layers, sums, encodings, jump_db)


def _report(source, built, backend, count, layers, sums, encodings, jump_db) -> dict:
    metrics = {name: s.metrics() for name, s in sums.items()}
    produced_from = {out: inputs for _, _, out, inputs in layers}

    def incoming_sqnr(inputs, seen) -> list[float]:
        """The SQNR of what a layer reads; through tensors the build does not hold (a Conv folded
        into the BatchNormalization after it), back to the compared tensors they come from."""
        found = []
        for name in inputs:
            if name in metrics:
                found.append(metrics[name]["sqnr_db"])
            elif name in produced_from and name not in seen:
                seen.add(name)
                found += incoming_sqnr(produced_from[name], seen)
        return found

    rows = []
    for node, op, out, inputs in layers:
        if out not in metrics:
            continue
        incoming = incoming_sqnr(inputs, set())
        m = metrics[out]
        enc = encodings.get(out)
        limits = _limits(enc)
        rows.append({"node": node, "op": op, "tensor": out, **m,
                     "jump_db": round(min(incoming) - m["sqnr_db"], 3) if incoming else 0.0,
                     "encoding": None if enc is None else {"bitwidth": enc.get("bitwidth", 16), **(
                         {"min": float(f"{limits[0]:.6g}"), "max": float(f"{limits[1]:.6g}")} if limits else {})}})
    first = next((r for r in rows if r["jump_db"] >= jump_db), None)
    ranked = sorted(rows, key=lambda r: -r["jump_db"])
    return {"source": str(source), "built": str(built), "backend": backend, "samples": count, "jump_db": jump_db,
            "first_jump": first["node"] if first else None, "largest_jumps": [r["node"] for r in ranked[:5]],
            "inputs": {n: metrics[n] for n in sums if n not in {r["tensor"] for r in rows}}, "layers": rows}


def format_report(report: dict, top: int = 10) -> str:
    first = report["first_jump"]
    lines = [f"{report['built']} on {report['backend']} against {report['source']} (onnxruntime, float), "
             f"{report['samples']} sample(s), {len(report['layers'])} layers compared",
             f"first layer losing >= {short(report['jump_db'])} dB: " + (first if first else "none"),
             "", f"  {'layer (largest jump first)':<32}{'op':<16}{'jump dB':>8}{'SQNR dB':>9}{'cosine':>9}"
             f"{'max abs':>10}{'clipped':>9}  encoding vs observed range"]
    for r in sorted(report["layers"], key=lambda r: -r["jump_db"])[:top]:
        enc = r["encoding"]
        rng = f"[{short(enc['min'])}, {short(enc['max'])}]" if enc and "min" in enc else "float" if not enc else "fp16"
        lines.append(f"  {r['node'][:31]:<32}{r['op'][:15]:<16}{r['jump_db']:>8.2f}{r['sqnr_db']:>9.2f}"
                     f"{r['cosine']:>9.4f}{r['max_abs']:>10.4g}{r['clipped']:>9.2%}  {rng} vs "
                     f"[{short(r['observed']['min'])}, {short(r['observed']['max'])}]")
    return "\n".join(lines)


def html_page(report: dict) -> str:
    """The report as one self-contained page: SQNR along the graph (inline SVG) and the table."""
    rows = report["layers"]
    labels = [r["node"] for r in rows]
    mark = next((i for i, r in enumerate(rows) if r["node"] == report["first_jump"]), None)
    chart = line_chart(labels, {"SQNR dB": [r["sqnr_db"] for r in rows]}, "SQNR (dB)",
                       "SQNR of each layer's output along the graph", mark)
    head = "".join(f"<th>{h}</th>" for h in ("#", "layer", "op", "jump dB", "SQNR dB", "cosine", "max abs", "clipped",
                                            "encoding range", "observed range"))
    body = []
    for i, r in enumerate(rows):
        enc = r["encoding"]
        rng = f"[{short(enc['min'])}, {short(enc['max'])}]" if enc and "min" in enc else "float" if not enc else "fp16"
        cls = ' class="jump"' if r["node"] == report["first_jump"] else ""
        body.append(f"<tr{cls}><td>{i}</td><td>{escape(r['node'])}</td><td>{escape(r['op'])}</td>"
                    f"<td>{r['jump_db']:.2f}</td><td>{r['sqnr_db']:.2f}</td><td>{r['cosine']:.4f}</td>"
                    f"<td>{r['max_abs']:.4g}</td><td>{r['clipped']:.2%}</td><td>{rng}</td>"
                    f"<td>[{short(r['observed']['min'])}, {short(r['observed']['max'])}]</td></tr>")
    title = f"accuracy-debug: {Path(report['built']).name} on {report['backend']}"
    return (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{escape(title)}</title><style>{STYLE}</style>"
            f"</head><body><h1>{escape(title)}</h1><p>{escape(report['built'])} against {escape(report['source'])} "
            f"(onnxruntime, float) over {report['samples']} sample(s). First layer losing at least "
            f"{short(report['jump_db'])} dB: <b>{escape(report['first_jump'] or 'none')}</b>.</p>{chart}"
            f"<table><tr>{head}</tr>{''.join(body)}</table></body></html>\n")


STYLE = ("body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;font-size:13px}"
         "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:nth-child(2),td:nth-child(3){text-align:left}"
         "tr.jump{background:#fdd}h1{font-size:20px}")


def write_report(report: dict, out_dir) -> None:
    out_dir = Path(out_dir)
    write_text(out_dir / "accuracy.json", json.dumps(report, indent=1) + "\n", only_if_changed=False)
    write_text(out_dir / "index.html", html_page(report), only_if_changed=False)
