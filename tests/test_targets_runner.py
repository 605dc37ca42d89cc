"""The native qnn-net-run on the host: the same flags, input lists and Result_N bytes as
`qnn-build net-run`, on cpu and npu; bad input as one clear line."""

import subprocess

import pytest
from targets_util import model_lib, results, run_native, run_python

from qnn_build.toolchain import build_runner


@pytest.mark.parametrize("name,precision,backend", [
    ("digits_cnn", "fp32", "cpu"), ("digits_cnn", "w8a8", "npu"), ("digits_cnn", "fp16", "npu"),
    ("transformer_block", "w8a8", "npu"), ("digits_lstm", "fp32", "cpu"),
])
def test_native_runner_writes_the_python_bytes(zoo_folder, name, precision, backend):
    folder = zoo_folder(name, precision)
    lib = model_lib(folder, "x86_64-linux")
    run_python(lib, folder, f"py-{backend}", backend)
    r = run_native("x86_64-linux", lib, folder, f"native-{backend}", backend, "--profiling_level", "basic")
    assert r.returncode == 0, r.stderr
    ours, python = results(folder / f"native-{backend}"), results(folder / f"py-{backend}")
    assert ours and ours == python
    assert (folder / f"native-{backend}" / "profile.json").is_file()


def test_native_runner_takes_dashed_flags_and_num_inferences(zoo_folder):
    folder = zoo_folder("digits_cnn", "fp32")
    lib = model_lib(folder, "x86_64-linux")
    r = subprocess.run([str(build_runner()), "--model", str(lib), "--input-list", "list.txt", "--output-dir", "n5",
                        "--num-inferences", "5", "--threads", "2"], cwd=folder, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (folder / "n5").iterdir()) == [f"Result_{k}" for k in range(5)]
    assert (folder / "n5/Result_2/logits.raw").read_bytes() == (folder / "n5/Result_0/logits.raw").read_bytes()


@pytest.mark.parametrize("list_text,fragment", [
    ("missing.raw\n", "raw file missing.raw not found (input 'image')"),
    ("other:=raw/0/image.raw\n", "'other' is not an input of the model"),
    ("# only a comment\n", "the input list has no inferences"),
])
def test_native_runner_bad_input_is_one_line(zoo_folder, list_text, fragment):
    folder = zoo_folder("digits_cnn", "fp32")
    lib = model_lib(folder, "x86_64-linux")
    (folder / "bad.txt").write_text(list_text)
    r = subprocess.run([str(build_runner()), "--model", str(lib), "--input_list", "bad.txt", "--output_dir", "bad"],
                       cwd=folder, capture_output=True, text=True)
    assert r.returncode == 1 and not (folder / "bad").exists()
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], r.stderr


def test_native_runner_refuses_a_raw_file_of_the_wrong_size(zoo_folder):
    folder = zoo_folder("digits_cnn", "fp32")
    (folder / "short.raw").write_bytes(b"\0" * 12)
    (folder / "short.txt").write_text("image:=short.raw\n")
    r = subprocess.run([str(build_runner()), "--model", str(model_lib(folder, "x86_64-linux")), "--input_list",
                        "short.txt", "--output_dir", "o"], cwd=folder, capture_output=True, text=True)
    assert r.returncode == 1 and "has 12 bytes; input 'image' needs 256" in r.stderr


def test_native_runner_refuses_a_library_for_another_target(zoo_folder):
    folder = zoo_folder("digits_cnn", "fp32")
    fake = folder / "arm.so"
    fake.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(11) + (183).to_bytes(2, "little") + bytes(44))
    r = subprocess.run([str(build_runner()), "--model", "arm.so", "--input_list", "list.txt", "--output_dir", "o"],
                       cwd=folder, capture_output=True, text=True)
    assert r.returncode == 1
    assert "built for aarch64-linux, not for x86_64-linux" in r.stderr and "--target x86_64-linux" in r.stderr


def test_native_runner_names_its_target():
    r = subprocess.run([str(build_runner()), "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and "x86_64-linux" in r.stdout, r.stdout + r.stderr
