"""The spec layer's error: one line, `file:line: key.path: message`, so editors can jump to it."""

from qnn_build.errors import QnnBuildError


class SpecError(QnnBuildError):
    """A bad spec or config file. `str(err)` is `file:line: key: message` (key omitted when none)."""

    def __init__(self, file, line: int | None, key: str, message: str):
        self.file = str(file)
        self.line = line
        self.key = key
        self.message = message
        where = f"{self.file}:{line}" if line else self.file
        super().__init__(f"{where}: {key}: {message}" if key else f"{where}: {message}")


def format_key(path) -> str:
    """('test', 'thresholds', 'sqnr_db') -> 'test.thresholds.sqnr_db'; list indices as [i]."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text
