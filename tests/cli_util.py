"""Shared by tests that run `qnn-build` as a user would: a subprocess, and the one clear line a
failing step must print (no traceback)."""

import contextlib
import io
import subprocess
import sys

from qnn_build.cli import main


def qnn_build(*args, cwd=None, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "qnn_build", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, check=False)


def qnn_build_in_process(*args) -> subprocess.CompletedProcess:
    """`qnn-build` run by its main() in this process, for a test that calls it many times: the same
    parsing, step and error line, without an interpreter's start-up (seconds a call on a loaded
    machine). An exception main() does not turn into its error line propagates: as a traceback would."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:  # argparse's usage errors
            code = e.code
    return subprocess.CompletedProcess(["qnn-build", *map(str, args)], code, out.getvalue(), err.getvalue())


def one_error_line(result, *fragments) -> str:
    """The failure's only stderr line, holding every fragment; the step must have failed."""
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]
