"""What a step says while it works: the `qnn_build` logger on stderr, and progress bars.

The level comes from `--log-level` (error, warning, info, debug). Without it a step says what it is
doing (info: "compiling the runtime library...", progress bars) only when stderr is a terminal, so
build logs and captured output hold results and errors only; `-q` keeps it to warnings and errors.
Progress bars are tqdm's: it draws one line that updates in place, with a rate and a time left, and
turns itself off where that cannot be drawn, which a hand-written bar would have to repeat.
"""

import logging
import sys

LEVELS = ("error", "warning", "info", "debug")
log = logging.getLogger("qnn_build")


def setup(level: str | None = None, quiet: bool = False) -> None:
    """Route the qnn_build logger to stderr at `level` (default: info on a terminal, else warning)."""
    if level is None:
        level = "warning" if quiet or not sys.stderr.isatty() else "info"
    log.setLevel(level.upper())
    if not log.handlers:
        handler = _Stderr()
        handler.setFormatter(logging.Formatter("qnn-build: %(message)s"))
        log.addHandler(handler)
    log.propagate = False


class _Stderr(logging.StreamHandler):
    """Writes to whatever sys.stderr is at the time (main() may run more than once in a process)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value):
        pass


def progress(iterable, what: str, total: int | None = None, unit: str = "it"):
    """`iterable`, with a progress bar on stderr while info is shown and stderr is a terminal."""
    shown = log.isEnabledFor(logging.INFO) and sys.stderr.isatty()
    if not shown:
        return iterable
    from tqdm import tqdm
    return tqdm(iterable, desc=what, total=total, unit=unit, leave=False, file=sys.stderr)
