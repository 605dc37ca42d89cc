"""`scons --cluster ADDRESS`: every step runs on the workers of a Dask distributed cluster.

SCons still decides what is out of date, in what order, and with how many steps at once (-j N);
only the spawning of each command line changes: env['SPAWN'] submits it as one task to the cluster
and returns its exit status, its output printed here as a local step's would be. The steps read and
write the project's files, so the workers must see the checkout at the same path (a shared
filesystem) and run the same tools; the first step checks both on every worker and refuses a
worker that differs, in one line, before anything runs (docs/build.md).

Dask reschedules the task of a worker that dies on another worker (the scheduler's
`allowed-failures`, 3 by default); a step's process dies with its worker (PR_SET_PDEATHSIG), and
the steps write every file to a temporary name then rename it, so a lost step leaves nothing
half-written, and SCons records no signature for a step that failed. A step that fails on a worker
fails the build as it would locally: its exit status and its messages come back.
"""

import ctypes
import os
import shlex
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

CONNECT_MESSAGE = "scons --cluster {address}: {why}"
WAIT_FOR_WORKERS_S = 60
_PR_SET_PDEATHSIG = 1


def use_cluster(env, address: str) -> None:
    """env.QnnCluster(address): run this environment's commands on the cluster at `address`
    (tcp://host:port, or the path of the scheduler's --scheduler-file). Connects at the first step."""
    env["SPAWN"] = ClusterSpawn(address, Path(env.Dir("#").abspath))


class ClusterSpawn:
    """A SCons SPAWN function (sh, escape, cmd, args, env) -> exit status, run on a Dask worker."""

    def __init__(self, address: str, root: Path):
        self.address, self.root = address, root
        self._lock = threading.Lock()
        self._client = None
        self._error = None

    def __call__(self, sh, escape, cmd, args, env) -> int:
        command = " ".join(args)
        try:
            client = self.client(env)
            key = f"{_step_name(args)}-{uuid.uuid4().hex}"
            status, out, err = client.submit(run_step, _argv(sh, command), str(self.root), _plain(env),
                                             key=key, pure=False).result()
        except _ConnectError as e:
            status, out, err = 2, "", f"{e}\n"
        except Exception as e:  # noqa: BLE001 -- a lost worker (too many times), a lost scheduler: one line
            status, out, err = 1, "", f"scons --cluster: {_step_name(args)}: {type(e).__name__}: {e}\n"
        with self._lock:
            sys.stdout.write(out)
            sys.stdout.flush()
            sys.stderr.write(err)
            sys.stderr.flush()
        return status

    def client(self, env):
        """The cluster's client, connected and checked once (a failure is remembered, not retried)."""
        with self._lock:
            if self._error:
                raise _ConnectError(self._error)
            if self._client is None:
                try:
                    self._client = self._connect(env)
                except _ConnectError as e:
                    self._error = str(e)
                    raise
            return self._client

    def _connect(self, env):
        try:
            from distributed import Client
        except ImportError:
            raise _ConnectError(CONNECT_MESSAGE.format(
                address=self.address, why="needs Dask distributed: pip install 'qnn-build[cluster]'")) from None
        try:
            if Path(self.address).is_file():
                client = Client(scheduler_file=self.address, set_as_default=False)
            else:
                client = Client(self.address, set_as_default=False)
            client.wait_for_workers(1, timeout=WAIT_FOR_WORKERS_S)
        except Exception as e:  # noqa: BLE001 -- unreachable, refused, timed out: one line
            raise _ConnectError(CONNECT_MESSAGE.format(address=self.address, why=f"{type(e).__name__}: {e}")) from None
        import atexit

        atexit.register(client.close)
        mine = describe_worker(str(self.root), _plain(env))
        for worker, theirs in sorted(client.run(describe_worker, str(self.root), _plain(env)).items()):
            why = _difference(mine, theirs)
            if why:
                client.close()
                raise _ConnectError(CONNECT_MESSAGE.format(address=self.address, why=f"worker {worker} {why}"))
        return client


class _ConnectError(Exception):
    pass


def describe_worker(root: str, env_vars: dict) -> dict:
    """What a worker must share with the machine running scons: the checkout, the tool versions."""
    from .stamps import step_stamps

    return {"sees_checkout": (Path(root) / "SConstruct").is_file(), "stamps": step_stamps(env_vars)}


def _difference(mine: dict, theirs: dict) -> str:
    if not theirs["sees_checkout"]:
        return "does not see the checkout at this path (the workers need it on a shared filesystem)"
    for step, stamp in mine["stamps"].items():
        other = theirs["stamps"].get(step, {})
        for key in sorted(set(stamp) | set(other)):
            if stamp.get(key) != other.get(key):
                return f"runs other tools: {step} {key} is {other.get(key)!r} there, {stamp.get(key)!r} here"
    return ""


def run_step(argv: list[str], cwd: str, env_vars: dict) -> tuple[int, str, str]:
    """On a worker: run one step's command line in the checkout; (exit status, stdout, stderr).
    The process dies with the worker (Linux): a lost step does not go on writing files."""
    done = subprocess.run(argv, cwd=cwd, env=env_vars, capture_output=True, text=True, check=False,
                          preexec_fn=_die_with_parent)  # noqa: PLW1509 -- only a prctl call, looked up before
    return done.returncode, done.stdout, done.stderr


def _libc_prctl():
    try:
        return ctypes.CDLL(None).prctl
    except (OSError, AttributeError):  # not Linux: a lost step finishes on its own
        return None


# Looked up here, not between fork and exec (where loading a library can deadlock a threaded worker).
_PRCTL = _libc_prctl()


def _die_with_parent() -> None:
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGKILL))


def _argv(sh: str, command: str) -> list[str]:
    """A plain command line runs as itself (so PR_SET_PDEATHSIG reaches the step, not only a shell
    that forked it); one with shell syntax through the shell, as SCons would run it."""
    try:
        words = shlex.split(command)
    except ValueError:
        return [sh, "-c", command]
    if not words or any(ch in command for ch in "|&;<>()$`*?"):
        return [sh, "-c", command]
    return words


def _plain(env) -> dict:
    """SCons' ENV as the strings a process gets (lists joined as search paths)."""
    return {str(k): os.pathsep.join(map(str, v)) if isinstance(v, (list, tuple)) else str(v) for k, v in env.items()}


def _step_name(args) -> str:
    """'qnn-build convert' for a step's command line (the task's name on the dashboard)."""
    words = " ".join(args).split()
    if "qnn_build" in words and words.index("qnn_build") + 1 < len(words):
        return f"qnn-build {words[words.index('qnn_build') + 1]}"
    return Path(words[0]).name if words else "command"
