"""qnn-net-run's file formats: input lists, raw tensors, Result_N outputs and profile.json.

An input list has one line per inference; each line holds `name:=path` entries separated by spaces
(a bare path is allowed for a single-input model). Lines starting with `#` are comments. Raw files
are little-endian, in the input's own dtype and the model's own layout. Outputs are written as
float32 to OUT/Result_K/<file-safe output name>.raw.
"""

import json
import re
import time
from pathlib import Path

import numpy as np

from ..atomic import write_bytes, write_text
from ..errors import QnnBuildError
from .binding import IOInfo, Model
from .profile import Recorder

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


def safe_name(name: str) -> str:
    """The file name for an output: every character but letters, digits, `_`, `.`, `-` becomes `_`."""
    return _UNSAFE.sub("_", name)


def parse_input_list(path, inputs: list[IOInfo]) -> list[dict[str, Path]]:
    """Each inference's input name -> raw file path."""
    path = Path(path)
    if not path.is_file():
        raise QnnBuildError(f"{path}: input list not found")
    names = [i.name for i in inputs]
    runs = []
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        entries: dict[str, Path] = {}
        for token in line.split():
            if ":=" in token:
                name, file = token.split(":=", 1)
            elif len(names) == 1:
                name, file = names[0], token
            else:
                raise QnnBuildError(f"{path}:{lineno}: '{token}' has no 'name:=' but the model has "
                                    f"{len(names)} inputs ({', '.join(names)})")
            if name not in names:
                raise QnnBuildError(f"{path}:{lineno}: '{name}' is not an input of the model "
                                    f"(inputs: {', '.join(names)})")
            entries[name] = _resolve(file, path)
        missing = [n for n in names if n not in entries]
        if missing:
            raise QnnBuildError(f"{path}:{lineno}: missing input '{missing[0]}'")
        runs.append(entries)
    if not runs:
        raise QnnBuildError(f"{path}: the input list has no inferences")
    return runs


def _resolve(file: str, list_path: Path) -> Path:
    """As qnn-net-run: relative to the working directory; failing that, to the list's directory."""
    p = Path(file)
    if p.is_absolute() or p.exists():
        return p
    return list_path.parent / p


def read_raw(path: Path, info: IOInfo, where: str) -> np.ndarray:
    if not path.is_file():
        raise QnnBuildError(f"{where}: raw file {path} not found (input '{info.name}')")
    data = path.read_bytes()
    expected = int(np.prod(info.shape)) * info.dtype.itemsize
    if len(data) != expected:
        raise QnnBuildError(f"{where}: {path} has {len(data)} bytes; input '{info.name}' needs {expected} "
                            f"({info.dtype} {list(info.shape)})")
    return np.frombuffer(data, info.dtype.newbyteorder("<")).reshape(info.shape)


def net_run(model: Model, input_list, output_dir, num_inferences: int | None = None,
            profiling_level: str | None = None) -> dict:
    """Run every line of the input list (or the first N, cycling when N exceeds the list).
    profiling_level 'basic' or 'detailed' also writes OUT/profile.json (runtime/profile.py)."""
    runs = parse_input_list(input_list, model.inputs)
    count = len(runs) if num_inferences is None else int(num_inferences)
    # Read and check every input before running anything: a bad file fails before any output.
    feeds = [{info.name: read_raw(run[info.name], info, str(input_list)) for info in model.inputs} for run in runs]
    out_dir = Path(output_dir)
    recorder = Recorder(model, profiling_level)
    recorder.start()
    for k in range(count):
        t0 = time.perf_counter()
        outputs = model.run(feeds[k % len(feeds)])
        recorder.record((time.perf_counter() - t0) * 1e6)
        for name, value in outputs.items():
            write_bytes(out_dir / f"Result_{k}" / f"{safe_name(name)}.raw",
                        np.ascontiguousarray(value, dtype="<f4").tobytes(), only_if_changed=False)
    profile = recorder.profile()
    if profiling_level:
        write_text(out_dir / "profile.json", json.dumps(profile, indent=1, sort_keys=True) + "\n", only_if_changed=False)
    return profile


def write_input_list(path, samples: list[dict[str, np.ndarray]], raw_dir=None) -> Path:
    """Write raw files and an input list for `samples` (used by tests and the build's test step)."""
    path = Path(path)
    raw_dir = Path(raw_dir) if raw_dir else path.parent
    lines = []
    for k, sample in enumerate(samples):
        entries = []
        for name, value in sample.items():
            raw = raw_dir / f"{k}" / f"{safe_name(name)}.raw"
            write_bytes(raw, np.ascontiguousarray(value).astype(value.dtype.newbyteorder("<")).tobytes())
            entries.append(f"{name}:={raw}")
        lines.append(" ".join(entries))
    write_text(path, "\n".join(lines) + "\n")
    return path
