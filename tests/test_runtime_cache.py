"""The runtime's object cache is shared by every process on the machine (test workers, parallel
build steps): one that finds another compiling the same objects waits for them instead of
compiling each a second time beside it (toolchain/build.py, `exclusive`)."""

import fcntl
import subprocess
import sys

from qnn_build.toolchain.build import exclusive

HOLDER = """
import sys, time
from pathlib import Path
from qnn_build.toolchain.build import exclusive
with exclusive(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(1.0)
    Path(sys.argv[2]).write_text("compiled")
"""


def test_a_second_process_waits_for_the_first_to_finish(tmp_path):
    lock, made = tmp_path / ".objects.lock", tmp_path / "objects"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), str(made)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with exclusive(lock):
            assert made.read_text() == "compiled", "got the lock while the first process held it"
    finally:
        holder.wait(timeout=60)
    assert holder.returncode == 0


def test_a_holder_that_dies_releases_the_lock(tmp_path):
    lock = tmp_path / ".objects.lock"
    code = ("import os, sys\nfrom pathlib import Path\nfrom qnn_build.toolchain.build import exclusive\n"
            "with exclusive(Path(sys.argv[1])):\n    os._exit(3)")
    assert subprocess.run([sys.executable, "-c", code, str(lock)]).returncode == 3
    with open(lock) as f:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError if the dead holder still held it
