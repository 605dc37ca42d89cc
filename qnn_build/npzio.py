"""Deterministic .npz files: numpy's savez stamps each member with the current time, which would
make identical statistics differ byte for byte (and defeat build caches)."""

import io
import zipfile

import numpy as np

from .atomic import write_bytes

_EPOCH = (1980, 1, 1, 0, 0, 0)


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name in sorted(arrays):
            member = io.BytesIO()
            np.save(member, np.asarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, member.getvalue())
    return buf.getvalue()


def save_npz(path, arrays: dict[str, np.ndarray]) -> bool:
    return write_bytes(path, npz_bytes(arrays))


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
