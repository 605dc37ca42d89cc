""".npz files: sample sets (calibration and test data, one key per input, arr[i] one sample) read
whole or row by row, and .npz files written as a pure function of their arrays.

numpy's savez stamps each member with the current time, which would make identical statistics or
references differ byte for byte (and defeat build caches): `npz_bytes` fixes the timestamps and
sorts the members. The test and reference steps read the first `samples` entries of a test data
file, so the reference and every build see the same samples in the same order.
"""

import io
import zipfile
from pathlib import Path

import numpy as np

from ..atomic import write_bytes
from ..errors import QnnBuildError, missing_file

_EPOCH = (1980, 1, 1, 0, 0, 0)


def npz_bytes(arrays: dict[str, np.ndarray], compressed: bool = True) -> bytes:
    """The .npz of `arrays`, byte for byte reproducible (deflated, or stored when not `compressed`)."""
    buf = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    with zipfile.ZipFile(buf, "w", compression=method) as z:
        for name in sorted(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asarray(arrays[name], order="C"), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_EPOCH)
            info.compress_type = method
            info.external_attr = 0o644 << 16
            z.writestr(info, member.getvalue())
    return buf.getvalue()


def save_npz(path, arrays: dict[str, np.ndarray], compressed: bool = True) -> bool:
    """Write the .npz of `arrays` atomically. Returns True if the file changed."""
    return write_bytes(path, npz_bytes(arrays, compressed))


class NpzRows:
    """One array of an .npz read row by row (arr[0], arr[1], ...), so that streaming a calibration
    set holds one sample, not the whole array: np.load reads a member whole at every access."""

    def __init__(self, path, name: str):
        self.path, self.member = path, f"{name}.npy"
        with zipfile.ZipFile(path) as z, z.open(self.member) as f:
            self.shape, self.fortran, self.dtype = self._header(f)

    @staticmethod
    def _header(f):
        fmt = np.lib.format
        read = fmt.read_array_header_1_0 if fmt.read_magic(f) == (1, 0) else fmt.read_array_header_2_0
        shape, fortran, dtype = read(f)
        return tuple(shape), fortran, dtype

    def __iter__(self):
        if self.fortran or self.dtype.hasobject or not self.shape:  # rare layouts: read whole
            yield from np.load(self.path, allow_pickle=False)[self.member[:-4]]
            return
        row_shape = self.shape[1:]
        row_bytes = int(np.prod(row_shape, dtype=np.int64)) * self.dtype.itemsize
        with zipfile.ZipFile(self.path) as z, z.open(self.member) as f:
            self._header(f)
            for _ in range(self.shape[0]):
                data = f.read(row_bytes)
                if len(data) != row_bytes:
                    raise ValueError(f"{self.member} is truncated")
                yield np.frombuffer(data, self.dtype).reshape(row_shape)


def open_npz(path, what: str):
    path = Path(path)
    if not path.is_file():
        raise missing_file(path, what)
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
