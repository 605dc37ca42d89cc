"""Sample sets: calibration data as an .npz (one key per input, arr[i] one sample, read row by row)
or a qnn-net-run input list, streamed one sample at a time and checked against the model's inputs."""

import zipfile
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from ..errors import QnnBuildError
from .input_list import parse_input_list, read_raw
from .npz import NpzRows


def iter_samples(source, inputs) -> tuple[int, Callable[[], Iterator[dict[str, np.ndarray]]]]:
    """(count, a function that streams the calibration samples) from an .npz or an input list."""
    path = Path(source)
    if not path.is_file():
        raise QnnBuildError(f"{path}: calibration data not found")
    if path.suffix == ".npz":
        try:
            rows = {info.name: NpzRows(path, info.name) for info in inputs}
        except KeyError:
            with zipfile.ZipFile(path) as z:
                names = [n[:-4] for n in z.namelist() if n.endswith(".npy")]
            missing = next(info.name for info in inputs if f"{info.name}.npy" not in names)
            raise QnnBuildError(f"{path}: no array for input '{missing}' (arrays: {', '.join(names)})") from None
        except (OSError, ValueError, zipfile.BadZipFile) as e:
            raise QnnBuildError(f"{path}: cannot read calibration data ({e})") from None
        for info in inputs:
            shape, per_sample = rows[info.name].shape, int(np.prod(info.shape))
            # arr[i] is one sample, in any layout of the input's values: a shape that merely has a
            # multiple of its size would be read as other samples, silently.
            if not shape or int(np.prod(shape[1:])) != per_sample:
                raise QnnBuildError(f"{path}: input '{info.name}': array of shape {list(shape)} does not hold "
                                    f"samples of shape {list(info.shape)} (each arr[i] must have {per_sample} "
                                    f"values)")
            if shape[0] == 0:
                raise QnnBuildError(f"{path}: the calibration set is empty (input '{info.name}' has no samples)")
        count = min(rows[info.name].shape[0] for info in inputs)

        def stream():
            streams = [iter(rows[info.name]) for info in inputs]
            for i in range(count):
                yield {info.name: _finite(next(s).astype(info.dtype).reshape(info.shape), path, info.name, i)
                       for info, s in zip(inputs, streams)}
        return count, stream

    runs = parse_input_list(path, inputs)

    def stream_list():
        for k, run in enumerate(runs):
            yield {info.name: _finite(read_raw(run[info.name], info, str(path)), path, info.name, k)
                   for info in inputs}
    return len(runs), stream_list


def _finite(x, path, name, index):
    if np.issubdtype(x.dtype, np.floating) and not np.all(np.isfinite(x)):
        raise QnnBuildError(f"{path}: calibration data for input '{name}' contains NaN or Inf (sample {index})")
    return x
