"""Every subcommand given bad input ends in one clear line and a non-zero exit, never a traceback:
an existing file where a folder is wanted, a folder where a file is, permission denied, a full disk
(a device as the output; the process's file-size limit; stdout on /dev/full), bad numbers, bad
levels. QNN's underscore spellings are accepted; a usage error prints the step's own usage. net-run
clears the folder a previous net-run wrote and refuses one holding anything else."""

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from cli_util import one_error_line
from test_cli import small_model

from qnn_build.cli import main
from qnn_build.toolchain import build_runner


@pytest.fixture(scope="module")
def d(tmp_path_factory):
    """A converted, built and finalized model, its input list, and a file and a folder to misuse."""
    d = tmp_path_factory.mktemp("cli_errors")
    onnx.save(small_model(dynamic=False), d / "m.onnx")
    np.zeros(6, np.float32).tofile(d / "x.raw")
    (d / "list.txt").write_text(f"x:={d / 'x.raw'}\n")
    np.savez(d / "data.npz", x=np.zeros((2, 2, 3), np.float32))
    for argv in (["convert", d / "m.onnx", "-o", d / "b"],
                 ["model-lib", "--cpp", d / "b/model.cpp", "--bin", d / "b/model.bin", "-o", d / "b/libmodel.so"],
                 ["context-binary", "--model", d / "b/libmodel.so", "-o", d / "b/model.ctx"],
                 ["reference", d / "m.onnx", "--data", d / "data.npz", "-o", d / "ref.npz"]):
        assert main([*map(str, argv), "-q"]) == 0
    (d / "afile").write_text("not a folder\n")
    (d / "adir").mkdir()
    return d


def run(capsys, *argv):
    """main() in this process (fast): the exit status and the output, as a subprocess would see them."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:  # argparse's usage errors
        code = e.code
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(argv, code, out, err)


LIB, CTX, LIST = "b/libmodel.so", "b/model.ctx", "list.txt"
NET_RUN = ["net-run", "--model", LIB, "--input-list", LIST]

# (argv with paths relative to the fixture's folder, fragments the one error line holds)
RUNTIME_ERRORS = [
    (["convert", "m.onnx", "-o", "afile"], ["afile: is a file, a folder is needed there"]),
    (["convert", "adir", "-o", "out"], ["adir: is a folder, the model is a file"]),
    (["convert", "m.onnx", "-o", "out", "--calibration", "adir", "--precision", "w8a8"], ["adir"]),
    (["calibrate", "m.onnx", "--calibration", "afile", "-o", "stats.npz"], ["afile"]),
    (["model-lib", "--cpp", "adir", "--bin", "b/model.bin", "-o", "lib.so"], ["adir"]),
    (["model-lib", "--cpp", "b/model.cpp", "--bin", "b/model.bin", "-o", "afile/lib.so"], ["afile: is a file"]),
    (["context-binary", "--model", LIB, "-o", "adir"], ["adir: is a folder, a file is needed there"]),
    (["context-binary", "--model", "adir", "-o", "x.ctx"], ["adir: is a folder, the model library is a file"]),
    (["context-binary", "--model", LIB, "-o", "/dev/full"], ["/dev/full: not a regular file"]),
    (["context-binary", "--model", LIB, "-o", "/dev/null"], ["/dev/null: not a regular file"]),
    ([*NET_RUN, "--output-dir", "afile"], ["afile: is a file, the output folder is needed there"]),
    (["net-run", "--model", LIB, "--input-list", "adir", "--output-dir", "o"], ["adir: is a folder, the input list"]),
    (["net-run", "--retrieve-context", "adir", "--input-list", LIST, "--output-dir", "o"], ["adir: is a folder"]),
    (["net-run", "--model", LIB, "--input-list", LIST, "--output-dir", "o", "--config", "threads0.json"],
     ["threads must be at least 1, not 0"]),
    (["runtime", "-o", "afile"], ["afile: is a file, a folder is needed there"]),
    (["reference", "m.onnx", "--data", "adir", "-o", "r.npz"], ["adir: is a folder, the test data is a file"]),
    (["reference", "m.onnx", "--data", "data.npz", "-o", "adir"], ["adir: is a folder, a file is needed there"]),
    (["test", "--model", LIB, "--reference", "adir", "--data", "data.npz", "-o", "t.json"], ["adir: is a folder"]),
    (["test", "--model", LIB, "--reference", "ref.npz", "--data", "data.npz", "-o", "adir"], ["adir: is a folder"]),
    (["release", "--config", "adir", "-o", "r.tar.gz"], ["adir"]),
    (["context-info", "adir"], ["adir: is a folder, a file is needed there"]),
    (["context-info", "b/model.bin"], ["b/model.bin: not a context binary"]),
    (["context-info", "truncated.ctx"], ["truncated.ctx: truncated"]),
    (["profile-viewer", "adir"], ["adir/profile.json: profile not found"]),
    (["profile-viewer", "m.onnx"], ["m.onnx: not a profile.json"]),
    (["profile-viewer", "data.npz"], ["data.npz: not a profile.json"]),
]


@pytest.mark.parametrize("argv,fragments", RUNTIME_ERRORS, ids=[" ".join(a[:1] + a[-2:]) for a, _ in RUNTIME_ERRORS])
def test_a_bad_path_is_one_line(d, capsys, monkeypatch, argv, fragments):
    monkeypatch.chdir(d)
    (d / "threads0.json").write_text('{"threads": 0}')
    (d / "truncated.ctx").write_bytes((d / CTX).read_bytes()[:100])
    one_error_line(run(capsys, *argv), f"qnn-build {argv[0]}: error:", *fragments)


USAGE_ERRORS = [
    ([*NET_RUN, "--output-dir", "o", "--num-inferences", "-5"], "--num-inferences: must be at least 1, not -5"),
    ([*NET_RUN, "--output-dir", "o", "--num-inferences", "many"], "'many' is not a whole number"),
    ([*NET_RUN, "--output-dir", "o", "--threads", "0"], "--threads: must be at least 1, not 0"),
    ([*NET_RUN, "--output-dir", "o", "--profiling-level", "bogus"], "invalid choice: 'bogus'"),
    ([*NET_RUN, "--output-dir", "o", "--log-level", "loud"], "invalid choice: 'loud'"),
    ([*NET_RUN, "--output-dir", "o", "--bogus_flag"], "unrecognized arguments: --bogus-flag"),
    (["reference", "m.onnx", "--data", "data.npz", "-o", "r.npz", "--samples", "0"], "must be at least 1"),
    (["test", "--model", LIB, "--samples", "-1"], "must be at least 1"),
    (["convert", "m.onnx", "-o", "o", "--percentile", "high"], "invalid float value: 'high'"),
    (["convert", "m.onnx", "-o", "o", "--input-dim", "x", "2,three"], "not a comma-separated list of integers"),
    (["convert", "m.onnx", "-o", "o", "--act-range", "widest"], "invalid choice: 'widest'"),
    (["context-info", CTX, "--verbose"], "unrecognized arguments: --verbose"),
]


@pytest.mark.parametrize("argv,fragment", USAGE_ERRORS, ids=[a[-1] for a, _ in USAGE_ERRORS])
def test_a_usage_error_shows_the_steps_usage(d, capsys, monkeypatch, argv, fragment):
    monkeypatch.chdir(d)
    r = run(capsys, *argv)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"usage: qnn-build {argv[0]} "), r.stderr  # the step's usage, not the top level's
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(f"qnn-build {argv[0]}: error:") and fragment in last, last
    assert not (d / "o").exists()


def test_qnn_underscore_spellings_are_accepted(d, capsys, monkeypatch):
    monkeypatch.chdir(d)
    r = run(capsys, "net-run", "--model", LIB, "--input_list", LIST, "--output_dir", "underscores",
            "--num_inferences", "2", "--profiling_level", "basic")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (d / "underscores").iterdir()) == ["Result_0", "Result_1", "profile.json"]


def test_net_run_clears_its_own_earlier_outputs_and_refuses_other_files(d, capsys, monkeypatch):
    monkeypatch.chdir(d)
    assert run(capsys, *NET_RUN, "--output-dir", "used", "--num-inferences", "3").returncode == 0
    assert run(capsys, *NET_RUN, "--output-dir", "used", "--num-inferences", "1").returncode == 0
    assert sorted(p.name for p in (d / "used").iterdir()) == ["Result_0"]  # no stale Result_1, Result_2
    (d / "used" / "notes.txt").write_text("mine\n")
    one_error_line(run(capsys, *NET_RUN, "--output-dir", "used"), "used: the output folder holds notes.txt")
    assert (d / "used" / "notes.txt").read_text() == "mine\n" and (d / "used" / "Result_0").is_dir()


def test_permission_denied_names_the_path(d, capsys, monkeypatch):
    """/sys refuses new files to every user, root included (who passes chmod's checks)."""
    if not Path("/sys/kernel").is_dir():
        pytest.skip("no /sys/kernel here to be refused by")
    monkeypatch.chdir(d)
    one_error_line(run(capsys, "context-binary", "--model", LIB, "-o", "/sys/kernel/m.ctx"),
                   "/sys/kernel/m.ctx: permission denied")
    one_error_line(run(capsys, "convert", "m.onnx", "-o", "/sys/kernel/qnnb/m"), "/sys/kernel/qnnb: permission denied")
    if os.geteuid() != 0:
        (d / "secret.onnx").write_bytes((d / "m.onnx").read_bytes())
        (d / "secret.onnx").chmod(0)
        one_error_line(run(capsys, "convert", "secret.onnx", "-o", "s"), "secret.onnx")


def _small_file_limit():
    """The child process may write no file above 100 bytes: writes fail as on a full disk (EFBIG)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))


def qnn_build(d, *argv, **kw):
    kw = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **kw}
    return subprocess.run([sys.executable, "-m", "qnn_build", *map(str, argv)], cwd=d, text=True, **kw)


def test_a_full_disk_is_one_line_and_leaves_nothing(d):
    r = qnn_build(d, "context-binary", "--model", LIB, "-o", "full/m.ctx", preexec_fn=_small_file_limit)
    one_error_line(r, "full/m.ctx: file too large")
    assert list((d / "full").iterdir()) == []  # no temporary file, no half-written context
    with open("/dev/full", "w") as full:
        r = qnn_build(d, "context-info", CTX, stdout=full)
    one_error_line(r, "context-info: error: writing the output: <stdout>: no space left on the device")


def test_native_runner_validates_counts_and_clears_its_folder(d):
    runner = str(build_runner())
    base = [runner, "--model", LIB, "--input_list", LIST, "--output_dir"]
    for flag, value, message in (("--num_inferences", "-5", "must be at least 1, not -5"),
                                 ("--threads", "0", "must be at least 1, not 0"),
                                 ("--threads", "two", "'two' is not a whole number")):
        r = subprocess.run([*base, "native", flag, value], cwd=d, capture_output=True, text=True)
        assert r.returncode == 1 and r.stderr.strip() == f"qnn-net-run: {flag}{':' if 'whole' in message else ''} " \
            f"{message}", r.stderr
    for count, left in (("3", ["Result_0", "Result_1", "Result_2"]), ("1", ["Result_0"])):
        r = subprocess.run([*base, "native", "--num_inferences", count], cwd=d, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert sorted(p.name for p in (d / "native").iterdir()) == left
    (d / "native" / "notes.txt").write_text("mine\n")
    r = subprocess.run([*base, "native"], cwd=d, capture_output=True, text=True)
    assert r.returncode == 1 and "native: the output folder holds notes.txt" in r.stderr
