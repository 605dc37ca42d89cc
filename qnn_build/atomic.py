"""Atomic, change-aware file writes.

Every artifact goes through here: it is written to a temporary file beside the target and renamed
into place, so an interrupted step never leaves a half-written file that looks up to date; and a file
whose content would not change is left untouched, so its timestamp does not wake anything up.
"""

import os
import tempfile
from pathlib import Path


def write_bytes(path, data: bytes, only_if_changed: bool = True) -> bool:
    """Write `data` to `path` atomically. Returns True when the file changed."""
    path = Path(path)
    if only_if_changed and path.is_file():
        try:
            if path.stat().st_size == len(data) and path.read_bytes() == data:
                return False
        except OSError:
            pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        _remove_quietly(tmp)
        raise
    return True


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
