"""The one error type every step raises for bad input: the CLI prints it as one line, no traceback."""


class QnnBuildError(Exception):
    """A user-facing error. `str(err)` is the single line the user sees."""


class ConvertError(QnnBuildError):
    """The model cannot be converted; the message names the node and op type."""


class RuntimeFailure(QnnBuildError):
    """The runtime returned an error status; the message carries the runtime's text."""


def os_error_line(e: OSError) -> str:
    """A file-system error as the one line the user sees: the path in the way and what is wrong with
    it, in plain words (an existing file where a folder is wanted, a folder where a file is, no
    permission, a full disk) instead of the errno of the call that met it."""
    import errno
    import os
    from pathlib import Path

    path = e.filename2 if isinstance(e, IsADirectoryError) and e.filename2 else e.filename
    if path is None:
        return e.strerror or str(e)
    path = os.fsdecode(path)
    if e.errno in (errno.EEXIST, errno.ENOTDIR):
        # mkdir met a file: name the file that stands where a folder of the path should be
        blocker = next((p for p in (Path(path), *Path(path).parents) if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            return f"{blocker}: is a file, a folder is needed there"
    reasons = {errno.EISDIR: "is a folder, a file is needed there", errno.EACCES: "permission denied",
               errno.EPERM: "permission denied", errno.ENOSPC: "no space left on the device",
               errno.EFBIG: "file too large for the file system or the process's limit",
               errno.EROFS: "read-only file system", errno.ENOENT: "no such file or folder"}
    return f"{path}: {reasons.get(e.errno, e.strerror or str(e))}"


def missing_file(path, what: str) -> QnnBuildError:
    """The error for a file that is not there: a folder in its place is named as such."""
    from pathlib import Path

    if Path(path).is_dir():
        return QnnBuildError(f"{path}: is a folder, the {what} is a file")
    return QnnBuildError(f"{path}: {what} not found")
