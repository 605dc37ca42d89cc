"""Shared by tests that run `qnn-build` as a user would: a subprocess, and the one clear line a
failing step must print (no traceback)."""

import subprocess
import sys


def qnn_build(*args, cwd=None, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "qnn_build", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, check=False)


def one_error_line(result, *fragments) -> str:
    """The failure's only stderr line, holding every fragment; the step must have failed."""
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]
