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
