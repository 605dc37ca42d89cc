"""Test data in and reference outputs out: the .npz files the reference and test steps share.

A test data file holds one key per fed input, `arr[i]` being one complete input (for example
[1, 1, 8, 8]), and optionally an int labels key. Both steps read the first `samples` entries, so the
reference and every build see the same samples in the same order.

`write_npz` writes an .npz that is a pure function of the arrays (fixed zip timestamps, sorted
members), so an unchanged reference rewrites nothing and wakes up no test.
"""

import io
import zipfile
from pathlib import Path

import numpy as np

from ..atomic import write_bytes
from ..errors import QnnBuildError


def open_npz(path, what: str):
    path = Path(path)
    if not path.is_file():
        raise QnnBuildError(f"{path}: {what} not found")
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        raise QnnBuildError(f"{path}: not a readable .npz ({e})") from None


def sample_count(data, names: list[str], samples: int | None, path) -> int:
    """How many samples the steps use: every fed input's first dimension, capped at `samples`."""
    counts = set()
    for name in names:
        if name not in data.files:
            raise QnnBuildError(f"{path}: no key '{name}' for input '{name}' (keys: {', '.join(data.files)})")
        counts.add(int(data[name].shape[0]))
    if len(counts) > 1:
        raise QnnBuildError(f"{path}: the inputs hold different numbers of samples ({sorted(counts)})")
    available = counts.pop() if counts else 1
    count = available if samples is None else min(int(samples), available)
    if count < 1:
        raise QnnBuildError(f"{path}: no test samples")
    return count


def sample(data, name: str, index: int, shape, path) -> np.ndarray:
    """Sample `index` of input `name`, reshaped to the input's pinned shape (its size must match)."""
    value = np.asarray(data[name][index])
    if shape is not None and value.size != int(np.prod(shape, dtype=np.int64)):
        raise QnnBuildError(f"{path}: sample {index} of '{name}' has shape {list(value.shape)}; "
                            f"the input's shape is {list(shape)}")
    return value.reshape(shape) if shape is not None else value


def write_npz(path, arrays: dict[str, np.ndarray]) -> bool:
    """Write arrays as an uncompressed .npz, byte-for-byte reproducible. Returns True if it changed."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name in sorted(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            z.writestr(info, member.getvalue())
    return write_bytes(path, buf.getvalue())
