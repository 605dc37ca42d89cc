"""The net-run step: every line of an input list (data/input_list.py) run once, each output written
as float32 to OUT/Result_K/<file-safe output name>.raw, and with profiling, OUT/profile.json.

As qnn-net-run, for input lists written for a QNN model: with native input files, an input with an
8/16-bit integer encoding is read as its uint8/uint16 codes (real = scale * (code + offset)); with
native output files, every output is written in its own dtype (the codes of an encoded one) instead of
float32; with the input layout NHWC, raw files of inputs of rank >= 3 are channel-last and are
transposed to the model's channel-first layout.
"""

import json
import shutil
import time
from pathlib import Path

import numpy as np

from ..atomic import write_bytes, write_text
from ..data.input_list import IOInfo, parse_input_list, read_raw, safe_name
from ..errors import QnnBuildError
from .binding import Model
from .profile import Recorder


LAYOUTS = ("NCHW", "NHWC")


def _read_input(path, info: IOInfo, layout: str, where: str) -> np.ndarray:
    if layout == "NCHW" or len(info.shape) < 3:
        return read_raw(path, info, where)
    n, c, *spatial = info.shape
    channel_last = IOInfo(info.name, info.dtype, (n, *spatial, c))
    x = read_raw(path, channel_last, where)
    return np.ascontiguousarray(np.moveaxis(x, -1, 1))


def clear_previous_run(out_dir: Path) -> None:
    """A used output folder: remove what an earlier net-run wrote there (Result_N folders of raw
    files, profile.json), so that no stale Result_N sits beside the new ones and a rerun with fewer
    inferences cannot be mistaken for more; refuse a folder holding anything else, since clearing
    it could lose files that are not ours."""
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise QnnBuildError(f"{out_dir}: is a file, the output folder is needed there")
    ours, other = [], []
    for entry in out_dir.iterdir():
        is_result = entry.is_dir() and entry.name.startswith("Result_") and entry.name[7:].isdigit() and \
            all(f.is_file() and f.suffix == ".raw" for f in entry.iterdir())
        (ours if is_result or (entry.name == "profile.json" and entry.is_file()) else other).append(entry)
    if other:
        raise QnnBuildError(f"{out_dir}: the output folder holds {other[0].name}, which net-run did not write; "
                            "give an empty or new folder (or one net-run wrote before, which it clears)")
    for entry in ours:
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def net_run(model: Model, input_list, output_dir, num_inferences: int | None = None,
            profiling_level: str | None = None, native_inputs: bool = False, native_outputs: bool = False,
            input_layout: str = "NCHW") -> dict:
    """Run every line of the input list (or the first N, cycling when N exceeds the list).
    profiling_level 'basic' or 'detailed' also writes OUT/profile.json (runtime/profile.py)."""
    if input_layout not in LAYOUTS:
        raise QnnBuildError(f"input layout '{input_layout}': expected one of {', '.join(LAYOUTS)}")
    if native_inputs or native_outputs:
        model.set_native_io(native_inputs, native_outputs)
    runs = parse_input_list(input_list, model.inputs)
    count = len(runs) if num_inferences is None else int(num_inferences)
    if count < 1:
        raise QnnBuildError(f"the number of inferences must be at least 1, not {count}")
    # Read and check every input before running anything: a bad file fails before any output.
    feeds = [{info.name: _read_input(run[info.name], info, input_layout, str(input_list)) for info in model.inputs}
             for run in runs]
    out_dir = Path(output_dir)
    clear_previous_run(out_dir)
    recorder = Recorder(model, profiling_level)
    recorder.start()
    for k in range(count):
        t0 = time.perf_counter()
        outputs = model.run(feeds[k % len(feeds)])
        recorder.record((time.perf_counter() - t0) * 1e6)
        for name, value in outputs.items():
            dtype = value.dtype.newbyteorder("<") if native_outputs else np.dtype("<f4")
            write_bytes(out_dir / f"Result_{k}" / f"{safe_name(name)}.raw",
                        np.ascontiguousarray(value, dtype=dtype).tobytes(), only_if_changed=False)
    profile = recorder.profile()
    if profiling_level:
        write_text(out_dir / "profile.json", json.dumps(profile, indent=1, sort_keys=True) + "\n", only_if_changed=False)
    return profile
