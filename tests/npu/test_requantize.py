"""The npu's one requantization primitive (qnn_build/runtime/npu/requantize.h): its fast forms, the
int64 ones the kernels run, give the reference's integer on every input tried (edges where the forms
switch, and a million random accumulators, multipliers and shifts), and the reference itself is
docs/npu.md (N2), checked here in exact Python integers."""

import subprocess

from qnn_build.toolchain.build import RUNTIME_DIR, cxx

HERE = __import__("pathlib").Path(__file__).parent


def n2(acc: int, mult: int, shift: int) -> int:
    """(N2) in exact integers: round half up."""
    t = 31 + shift
    return acc * mult << -t if t <= 0 else (acc * mult + (1 << (t - 1))) >> t


def test_fast_forms_equal_the_reference_and_the_reference_is_n2(tmp_path):
    exe = tmp_path / "requantize_check"
    subprocess.run([cxx(), "-std=c++17", "-O2", f"-I{RUNTIME_DIR / 'npu'}", str(HERE / "requantize_check.cpp"),
                    "-o", str(exe)], check=True, capture_output=True)
    r = subprocess.run([str(exe), "1000000", "7"], capture_output=True, text=True)
    lines = r.stdout.splitlines()
    assert lines[-1] == "mismatches 0" and r.returncode == 0, lines[-1]
    checked = 0
    for line in lines[:-1]:
        acc, mult, shift, got = map(int, line.split())
        want = n2(acc, mult, shift)
        if -(1 << 63) <= want < (1 << 63):
            assert got == want, f"requantize({acc}, {mult}, {shift}) = {got}, (N2) gives {want}"
            checked += 1
    assert checked > 10000
