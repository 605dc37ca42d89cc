"""The npu against Qualcomm's HTP (emulated on x86-64): the differential table of issue 15.

    python bench/npu_vs_htp.py [--ops Add,Conv] [--models digits_cnn,ppocr_cls] [--no-models]
                               [--samples 20] [--real-samples 4] [--write docs/npu-vs-htp.md] [--smoke]

Per op the npu runs in integers (the cases of tests/htp/npu_vs_htp_cases.py, each at 8- and 16-bit
activations): cases run, cases bit-exact with the htp, the largest difference in output codes (LSB),
and how the differing values differ (tests/htp/differential.py `Outcome.pattern`). Per zoo and
third-party model at w8a8 (`--samples` test samples; `--real-samples` inputs of their kind): the
share of output values within 1 LSB of the htp, and the largest difference. --write puts both tables
in a markdown file (docs/npu-vs-htp.md is this command's output). --smoke: one Conv case, no models
(CI: it runs; tests/htp/test_npu_vs_htp.py checks a subset). HTP outputs of the op cases are cached (differential.py), so a second run takes seconds.
"""

import argparse
import datetime
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from tests.htp import npu_vs_htp_cases  # noqa: E402
from tests.htp.differential import SOC, run_table, summarize  # noqa: E402

PATTERN_WORDS = {"tie_up": "ties rounded up by the htp", "tie_down": "ties rounded down by the htp",
                 "saturated": "saturated", "npu_nearer": "npu nearer the exact value",
                 "htp_nearer": "htp nearer", "equal_distance": "equally near", "undefined": "0/0"}


def op_rows(ops: set, smoke: bool) -> tuple[list[str], list[str]]:
    """The per-op table and the per-case list of the cases that differ."""
    cases = [c for c in npu_vs_htp_cases.subset() if c.op == "Conv"] if smoke else npu_vs_htp_cases.all_cases()
    outcomes = run_table([c for c in cases if not ops or c.op in ops])
    table = summarize(outcomes)
    lines = ["| op | cases | bit-exact a8 | max LSB a8 | within 1 LSB a8 | bit-exact a16 | max LSB a16 "
             "| within 1 LSB a16 | refused by the htp |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for op in sorted(table, key=str.lower):
        cells, refused = [], []
        for bits in (8, 16):
            row = table[op].get(bits)
            ran = len(row["cases"]) - len(row["refused"]) if row else 0
            if not ran:
                cells += ["-", "-", "-"]
            else:
                cells += [f"{ran - len(row['inexact'])}/{ran}", str(row["max_lsb"]),
                          f"{100 * row['within1'] / max(row['values'], 1):.1f} %"]
            if row and row["refused"]:
                refused.append(f"a{bits} {', '.join(sorted(row['refused']))}: "
                               f"{short(next(iter(row['refused'].values())))}")
        count = len(set().union(*(r["cases"] for r in table[op].values())))
        lines.append(f"| {op} | {count} | {' | '.join(cells)} | {'; '.join(refused)} |")
    details = ["| op | case | bits | values | bit-exact | max LSB | where they differ (values) |",
               "|---|---|---:|---:|---:|---:|---|"]
    for o in outcomes:
        if o.refused or not o.diff.any():
            continue
        d = np.abs(o.diff)
        kinds = ", ".join(f"{PATTERN_WORDS[k]} {v}" for k, v in sorted(o.pattern().items(), key=lambda kv: -kv[1])) \
            if o.ideal is not None else ""
        name = o.case.name + (f" ({o.output})" if len(o.case.outputs) > 1 else "")
        details.append(f"| {o.case.op} | {name} | {o.bits} | {d.size} | {100 * np.mean(d == 0):.1f} % "
                       f"| {int(d.max())} | {kinds} |")
    return lines, details


def short(reason: str) -> str:
    """A refusal without the EP log's timestamp prefix, cut at 140 characters."""
    reason = re.sub(r"\d{4}-\d\d-\d\d [\d:.]+ \[\w:onnxruntime:[^\]]*\] ", "", reason)
    return reason[:140].replace("|", "/")


def model_rows(names: set, samples: int, real_samples: int) -> list[str]:
    """w8a8: npu vs htp on each zoo and third-party model, output codes compared."""
    from bench_htp import real_cases, zoo_cases

    from qnn_build.convert import convert
    from qnn_build.htp.generate import generate_context
    from qnn_build.htp.session import HtpModel
    from qnn_build.runtime.binding import Model
    from qnn_build.toolchain import build_model_lib

    lines = ["| model | outputs compared | within 1 LSB | bit-exact | max LSB |", "|---|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory(prefix="qnnb-npu-vs-htp-models-") as tmp:
        models = [(case, samples) for case in zoo_cases(names)] + [(case, real_samples) for case in real_cases(names)]
        for (name, source, dims, values, calibration, make), count in models:
            out = Path(tmp) / name
            if calibration is None:
                stacked = make(8)
                calibration = Path(tmp) / f"{name}_cal.npz"
                np.savez(calibration, **{k: np.stack([s[k] for s in stacked]) for k in stacked[0]})
            convert(source, out, dims, values, precision="w8a8", calibration=calibration, qdq=True)
            lib = build_model_lib(out / "model.cpp", out / "model.bin", out / "libmodel.so")
            generate_context(out / "model.qdq.onnx", out / "htp" / "model.htp.onnx", SOC)
            diffs = []
            with Model(lib, backend="npu", threads=1, keep_tensors=True) as npu, \
                    HtpModel(out / "htp" / "model.htp.onnx") as htp:
                for feeds in make(count):
                    theirs = htp.run_codes(feeds)
                    npu.run(feeds)
                    ours = npu.tensors(float_only=False)
                    diffs += [np.abs(ours[o.name].astype(np.int64).reshape(-1)
                                     - theirs[o.name].astype(np.int64).reshape(-1)) for o in htp.outputs]
            d = np.concatenate(diffs)
            line = (f"| {name} | {d.size} | {100 * np.mean(d <= 1):.2f} % | {100 * np.mean(d == 0):.2f} % "
                    f"| {int(d.max())} |")
            print(line, flush=True)
            lines.append(line)
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", help="comma-separated ops (default: every op of the case table)")
    ap.add_argument("--models", help="comma-separated models (default: the zoo and the third-party models)")
    ap.add_argument("--no-models", action="store_true", help="the op table only")
    ap.add_argument("--samples", type=int, default=20, help="test inputs per zoo model (default 20)")
    ap.add_argument("--real-samples", type=int, default=4,
                    help="inputs per third-party model (default 4: the HTP takes seconds per inference)")
    ap.add_argument("--write", type=Path, help="write the tables to this markdown file")
    ap.add_argument("--smoke", action="store_true", help="one Conv case, no models: checks that it runs")
    args = ap.parse_args()
    ops = set(args.ops.split(",")) if args.ops else set()
    print(f"npu vs htp ({SOC}, emulated): output codes of the same graphs at the same encodings", flush=True)
    ops_table, details = op_rows(ops, args.smoke)
    print("\n".join(ops_table + [""] + details), flush=True)
    models_table = []
    if not (args.smoke or args.no_models):
        models_table = model_rows(set(args.models.split(",")) if args.models else set(), args.samples,
                                  args.real_samples)
    if args.write:
        write(args.write, ops_table, details, models_table, args)
        print(f"wrote {args.write}")
    return 0


def write(path: Path, ops_table, details, models_table, args) -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    text = [HEADER.format(soc=SOC), *ops_table, "", DETAILS, *details, ""]
    if models_table:
        text += [MODELS.format(samples=args.samples, real_samples=args.real_samples), *models_table, ""]
    text.append(f"Generated by `python bench/npu_vs_htp.py --write {path}` on {datetime.date.today()} "
                f"(tree {commit}).")
    path.write_text("\n".join(text) + "\n")


HEADER = """# The npu against Qualcomm's HTP

Our `npu` backend against the `htp` backend (QNN HTP, emulated on x86-64, prepared for {soc}) on the
same graphs at the same encodings, fed the same input codes, compared in output codes (docs/npu.md
"Against Qualcomm's HTP" says which of the HTP's rules the npu follows and why the others differ).
Per op: the cases of `tests/htp/npu_vs_htp_cases.py` (shapes, strides, pads, broadcasting,
per-channel and 4-bit weights, saturating ranges, zero points at the ends of the code range,
requantizations at exactly .5) at 8- and 16-bit activations: cases run, cases bit-exact, the largest difference (LSB of
the output's encoding), the share of output values within 1 LSB.
"""

DETAILS = """The cases that differ, each differing value classed against the op's exact value (its float
result before the output's quantize, from onnxruntime on the exported QDQ model): a tie (exactly .5)
the htp rounded up or down, a saturated value, or the backend nearer the exact value.
"""

MODELS = """## Whole models at w8a8

Every output value of {samples} test samples per zoo model and {real_samples} inputs of their kind per
third-party model, npu against htp in output codes:
"""


if __name__ == "__main__":
    sys.exit(main())
