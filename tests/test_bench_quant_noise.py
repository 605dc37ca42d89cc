"""bench/bench_quant.py's noise of a difference (difference_sd): the paired bootstrap over the test
samples that tells a shortfall of the default against a peer from the luck of the test set."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import bench_quant  # noqa: E402


def result(err, sig):
    return bench_quant.Result("row", "ours", "w8a8", per_sample=[(np.asarray(err, float), np.asarray(sig, float))])


def test_identical_rows_differ_by_nothing():
    rng = np.random.default_rng(1)
    err, sig = rng.random(50), 1 + rng.random(50)
    assert bench_quant.difference_sd(result(err, sig), result(err, sig)) == 0.0


def test_the_noise_shrinks_with_more_test_samples():
    """Two rows whose per-sample errors differ at random: the spread of their SQNR difference falls
    as 1/sqrt(N), and a constant factor between them (a real difference) has no spread at all."""
    rng = np.random.default_rng(2)
    sds = []
    for n in (32, 512):
        sig, a = np.ones(n), rng.exponential(0.01, n)
        b = a * rng.lognormal(0, 0.5, n)
        sds.append(bench_quant.difference_sd(result(a, sig), result(b, sig)))
    assert sds[0] > 2.5 * sds[1] > 0
    a = rng.exponential(0.01, 64)
    assert bench_quant.difference_sd(result(a, np.ones(64)), result(2 * a, np.ones(64))) < 1e-9


def test_an_exact_output_does_not_hide_the_noise_of_the_others():
    """An output both rows give exactly (a detector's class ids) is infinite SQNR, as sqnr_db says, so
    the worst output stays the noisy one."""
    rng = np.random.default_rng(3)
    n = 64
    sig, a = np.ones(n), rng.exponential(0.01, n)
    noisy = bench_quant.difference_sd(result(a, sig), result(a * rng.lognormal(0, 0.5, n), sig))
    exact = (np.zeros(n), np.zeros(n))
    first = bench_quant.Result("a", "ours", "w8a8", per_sample=[(a, sig), exact])
    second = bench_quant.Result("b", "ort", "w8a8", per_sample=[(first.per_sample[0][0] * rng.lognormal(0, 0.5, n), sig),
                                                                 exact])
    assert bench_quant.difference_sd(first, second) > 0.3 * noisy > 0
