"""Reproducible builds: checkouts at different paths build byte-identical artifacts and release
archives, and `--cache-dir` lets a clean checkout fetch every artifact without running a step."""

import shutil

from test_scons_support import build, steps, write_project


def outputs(root):
    """Every built file (configs and stamps included), relative path -> bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted((root / "out").rglob("*")) if p.is_file()}


def test_checkouts_build_identical_bytes_and_share_a_cache(tmp_path):
    pristine = write_project(tmp_path / "pristine")
    a = shutil.copytree(pristine, tmp_path / "a" / "zoo")
    b = shutil.copytree(pristine, tmp_path / "b" / "deeper" / "checkout")
    c = shutil.copytree(pristine, tmp_path / "c")
    cache = tmp_path / "cache"

    build(a, "--cache-dir", cache, "-j2", "release")
    build(b, "-j2", "release")  # no cache: built from scratch at another path
    built_a, built_b = outputs(a), outputs(b)
    assert built_a.keys() == built_b.keys()
    different = [path for path in built_a if built_a[path] != built_b[path]]
    assert different == []
    assert "out/release/qnn-zoo-0.1.0.tar.gz" in built_a

    fetched = build(c, "--cache-dir", cache, "release")
    assert steps(fetched) == []  # nothing converted, compiled, run or packed
    assert "Retrieved `out/adder/fp32/libmodel.so' from cache" in fetched.stdout
    assert "Retrieved `out/release/qnn-zoo-0.1.0.tar.gz' from cache" in fetched.stdout
    assert outputs(c) == built_a
    assert steps(build(c, "--cache-dir", cache, "release")) == []
