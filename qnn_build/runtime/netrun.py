"""The net-run step: every line of an input list (data/input_list.py) run once, each output written
as float32 to OUT/Result_K/<file-safe output name>.raw, and with profiling, OUT/profile.json.
"""

import json
import time
from pathlib import Path

import numpy as np

from ..atomic import write_bytes, write_text
from ..data.input_list import parse_input_list, read_raw, safe_name
from .binding import Model
from .profile import Recorder


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
