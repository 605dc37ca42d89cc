"""Atomic, change-aware file writes.

Every artifact goes through here: it is written to a temporary file beside the target and renamed
into place, so an interrupted step never leaves a half-written file that looks up to date; and a file
whose content would not change is left untouched, so its timestamp does not wake anything up.
"""

import errno
import os
import tempfile
from pathlib import Path

from .errors import QnnBuildError


def write_bytes(path, data: bytes, only_if_changed: bool = True) -> bool:
    """Write `data` to `path` atomically. Returns True when the file changed."""
    path = Path(path)
    _check_replaceable(path)
    if only_if_changed and path.is_file():
        try:
            if path.stat().st_size == len(data) and path.read_bytes() == data:
                return False
        except OSError:
            pass
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:  # name the file asked for, not the temporary one
        raise OSError(e.errno, e.strerror, str(path)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as e:
        _remove_quietly(tmp)
        if e.filename is None or e.filename == tmp:  # a full disk names no file
            raise OSError(e.errno, e.strerror, str(path)) from None
        raise
    except BaseException:
        _remove_quietly(tmp)
        raise
    return True


def _check_replaceable(path: Path) -> None:
    """The rename below would put a file in place of a folder's or a device's name: refuse instead
    (`-o /dev/null` must not replace the device with a regular file)."""
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if path.exists() and not path.is_file():
        raise QnnBuildError(f"{path}: not a regular file (a device, pipe or socket); give a file's path")


def write_text(path, text: str, only_if_changed: bool = True) -> bool:
    return write_bytes(path, text.encode("utf-8"), only_if_changed)


def remove_quietly(*paths) -> None:
    """Remove files that a failed step may have left; missing files are fine."""
    for p in paths:
        _remove_quietly(p)


def _remove_quietly(p) -> None:
    try:
        os.unlink(p)
    except FileNotFoundError:
        pass
