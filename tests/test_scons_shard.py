"""`scons --shard=K/N`: the N shards of a CI matrix together build the zoo, each (model, precision)
once, into a shared cache, from which `scons release` then packs the zoo without rebuilding."""

import shutil

import pytest

from qnn_build.errors import QnnBuildError
from qnn_build.sconstool.shard import parse_shard
from test_scons_support import build, run_scons, steps, write_project


def test_shards_split_the_zoo_and_the_release_comes_from_their_cache(tmp_path):
    pristine = write_project(tmp_path / "pristine")
    first, second, release = (shutil.copytree(pristine, tmp_path / name) for name in ("one", "two", "release"))
    cache = tmp_path / "cache"

    one = steps(build(first, f"--cache-dir={cache}", "--shard=1/2", "-j2"))
    two = steps(build(second, f"--cache-dir={cache}", "--shard=2/2", "-j2"))
    # Units sorted by (model, precision), dealt round-robin: adder fp32 and classifier fp32 to shard 1.
    assert [s for s in one if s.startswith("convert")] == ["convert adder fp32", "convert classifier fp32"]
    assert [s for s in two if s.startswith("convert")] == ["convert adder w8a8"]
    tests = sorted(s for s in one + two if s.startswith("test"))
    assert tests == ["test adder fp32 cpu", "test adder w8a8 cpu", "test adder w8a8 npu", "test classifier fp32 cpu"]
    assert "runtime x86_64-linux" not in two  # the second shard fetched it from the first one's cache

    packed = build(release, f"--cache-dir={cache}", "release")
    assert steps(packed) == ["release qnn-zoo-0.1.0.tar.gz"]  # everything else retrieved, nothing rebuilt
    assert (release / "out/release/qnn-zoo-0.1.0.tar.gz").is_file()


def test_a_bad_shard_is_one_line_and_builds_nothing(tmp_path):
    root = write_project(tmp_path / "zoo", models=("adder",))
    result = run_scons(root, "--shard=3/2")
    assert result.returncode == 2
    assert "scons: *** --shard 3/2: K must be between 1 and N" in result.stderr
    assert not (root / "out" / "adder" / "fp32" / "model.cpp").exists()
    with pytest.raises(QnnBuildError, match="--shard half: expected K/N, like 1/4"):
        parse_shard("half")
    assert parse_shard("2/3") == (2, 3)
