"""`scons --cluster=ADDRESS`: the steps run on a real Dask scheduler and two workers (separate
processes, separate working directories, loopback only). The artifacts are byte-identical to a local
build, a worker killed while it runs a step is survived, and a second checkout gets every artifact
from the shared cache without running a step."""

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from qnn_build.sconstool.cluster import _difference
from test_scons_cache import outputs
from test_scons_support import TIMEOUT, build, built_template, run_scons, scons_command, steps, write_project

distributed = pytest.importorskip("distributed", reason="the cluster tests need the 'cluster' extra (Dask distributed)")

START_TIMEOUT = 60


def _dask(tool: str, *args, cwd):
    """`dask scheduler` / `dask worker` as its own process group (so a test can kill all of it)."""
    log = open(cwd / f"{tool}.log", "w")  # noqa: SIM115 -- closed with the process
    return subprocess.Popen([sys.executable, "-m", f"distributed.cli.dask_{tool}", *map(str, args)], cwd=cwd,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A scheduler on 127.0.0.1 and workers w1, w2 (one step at a time each): (scheduler file, workers)."""
    root = tmp_path_factory.mktemp("cluster")
    scheduler_file = root / "scheduler.json"
    processes = [_dask("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                       "--scheduler-file", scheduler_file, "--idle-timeout", "600", cwd=root)]
    workers = {}
    for name in ("w1", "w2"):
        (root / name).mkdir()
        workers[name] = _dask("worker", "--scheduler-file", scheduler_file, "--name", name, "--nthreads", "1",
                              "--no-nanny", "--no-dashboard", "--local-directory", root / name,
                              "--death-timeout", "60", cwd=root / name)
    processes += workers.values()
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not scheduler_file.exists():
            assert time.monotonic() < deadline, (root / "scheduler.log").read_text()
            time.sleep(0.2)
        with distributed.Client(scheduler_file=str(scheduler_file), timeout=START_TIMEOUT) as client:
            client.wait_for_workers(2, timeout=START_TIMEOUT)
        yield scheduler_file, workers
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def _worker_address(client, name: str) -> str:
    return next(address for address, info in client.scheduler_info()["workers"].items() if info["name"] == name)


def test_cluster_build_survives_a_killed_worker_matches_a_local_build_and_fills_the_cache(
        cluster, tmp_path, tmp_path_factory):
    scheduler_file, workers = cluster
    local, _ = built_template(tmp_path_factory)  # the fixture zoo built locally with -j2
    pristine = write_project(tmp_path / "pristine")
    a = shutil.copytree(pristine, tmp_path / "a" / "zoo")
    b = shutil.copytree(pristine, tmp_path / "b" / "elsewhere")
    cache = tmp_path / "cache"

    scons = subprocess.Popen([*scons_command(), "-Q", "-j4", f"--cluster={scheduler_file}", f"--cache-dir={cache}"],
                             cwd=a, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with distributed.Client(scheduler_file=str(scheduler_file), timeout=START_TIMEOUT) as client:
        w1 = _worker_address(client, "w1")
        deadline = time.monotonic() + TIMEOUT
        while not (running := client.processing(workers=[w1])[w1]):  # wait until w1 runs a step
            assert scons.poll() is None and time.monotonic() < deadline, "the build ended before w1 got a step"
            time.sleep(0.05)
        os.kill(workers["w1"].pid, signal.SIGKILL)  # the worker only: its step must die with it
    out, err = scons.communicate(timeout=TIMEOUT)
    assert scons.returncode == 0, f"{out}\n{err}"
    assert running[0].startswith("qnn-build ")
    ran = steps(out)
    assert len(ran) == len(set(ran)) == 17  # each step once, the lost one included
    assert outputs(a) == outputs(local)  # byte-identical to the local build, nothing half-written
    assert run_scons(a, "--question").returncode == 0  # and SCons takes all of it as up to date

    fetched = build(b, f"--cache-dir={cache}")  # a second checkout, no cluster: all from the cache
    assert steps(fetched) == []
    assert outputs(b) == outputs(local)


def test_an_unreachable_cluster_is_one_line_and_writes_no_artifact(tmp_path):
    root = write_project(tmp_path / "zoo", models=("adder",))
    result = run_scons(root, "--cluster=tcp://127.0.0.1:9", env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"})
    assert result.returncode != 0
    assert "scons --cluster tcp://127.0.0.1:9: OSError: Timed out trying to connect" in result.stderr
    assert not list((root / "out").rglob("model.cpp")) and not list((root / "out").rglob("*.so"))


@pytest.mark.parametrize("theirs, message", [
    ({"sees_checkout": False, "stamps": {}}, "does not see the checkout at this path"),
    ({"sees_checkout": True, "stamps": {"convert": {"onnx": "1.15.0"}}},
     "runs other tools: convert onnx is '1.15.0' there, '1.17.0' here"),
    ({"sees_checkout": True, "stamps": {"convert": {"onnx": "1.17.0"}}}, ""),
])
def test_a_worker_that_differs_is_refused_with_the_difference(theirs, message):
    mine = {"sees_checkout": True, "stamps": {"convert": {"onnx": "1.17.0"}}}
    found = _difference(mine, theirs)
    assert found.startswith(message) and bool(found) == bool(message), found
