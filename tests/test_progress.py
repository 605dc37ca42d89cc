"""What a step says while it works: progress bars for calibration on a terminal, nothing when stderr
is not one or with -q, and on a machine with no runtime library yet, a line saying it will compile
before anything else is printed."""

import fcntl
import os
import signal
import struct
import subprocess
import sys
import termios

import numpy as np
import onnx
import pytest
from test_cli import small_model


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("progress")
    onnx.save(small_model(dynamic=False), d / "m.onnx")
    np.savez(d / "cal.npz", x=np.random.default_rng(0).standard_normal((16, 2, 3)).astype(np.float32))
    return d


def convert(d, out, *extra, stderr):
    return subprocess.run([sys.executable, "-m", "qnn_build", "convert", d / "m.onnx", "-o", d / out, "--precision",
                           "w8a8", "--calibration", d / "cal.npz", *extra], stdout=subprocess.PIPE, stderr=stderr,
                          timeout=300)


def on_a_terminal(d, out, *extra) -> str:
    """convert with stderr on a pseudo-terminal 100 columns wide: what the terminal showed."""
    main, child = os.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    r = convert(d, out, *extra, stderr=child)
    os.close(child)
    shown = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child's end is closed and everything was read
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    assert r.returncode == 0
    return shown.decode("utf-8", "replace")


def test_calibration_shows_progress_on_a_terminal(model):
    shown = on_a_terminal(model, "tty")
    assert "calibration, ranges:" in shown and "/16 [" in shown and "calibration, histograms:" in shown


def test_quiet_with_q_or_without_a_terminal(model):
    assert on_a_terminal(model, "tty-q", "-q") == ""
    r = convert(model, "piped", stderr=subprocess.PIPE)
    assert r.returncode == 0 and r.stderr == b""


def test_a_fresh_machine_hears_about_the_compile_first(model, tmp_path):
    """An empty runtime cache: the first line comes before the imports and the compile (the
    process is stopped there; the compile itself is not this test's business)."""
    env = {**{k: v for k, v in os.environ.items() if k != "QNNB_RUNTIME"}, "QNNB_CACHE_DIR": str(tmp_path / "empty-cache")}
    p = subprocess.Popen([sys.executable, "-m", "qnn_build", "net-run", "--model", model / "lib.so", "--input-list",
                          model / "list.txt", "--output-dir", tmp_path / "out", "--log-level", "info"],
                         stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        first = p.stderr.readline()
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    assert first.startswith("qnn-build: first run here: the runtime library compiles"), first
