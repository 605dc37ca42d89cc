"""The one error type every step raises for bad input: the CLI prints it as one line, no traceback."""


class QnnBuildError(Exception):
    """A user-facing error. `str(err)` is the single line the user sees."""


class ConvertError(QnnBuildError):
    """The model cannot be converted; the message names the node and op type."""


class RuntimeFailure(QnnBuildError):
    """The runtime returned an error status; the message carries the runtime's text."""
