"""`scons report`: out/report/index.html for the fixture zoo, with its figures taken from the builds'
test.json files and measured latencies, per-build profile and accuracy-debug pages, opened in a
real headless Chromium (Debian's package; .ci/run installs it) that renders it to a screenshot and
its DOM. Skipped, with the reason, where no Chromium is installed."""

import json
import shutil
import subprocess
import zlib
from pathlib import Path

import pytest
from test_scons_support import build, built_template, copy_project

from qnn_build.report.summary import human_size, key_metrics, read_test

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    template, _ = built_template(tmp_path_factory)
    root = copy_project(template, tmp_path_factory.mktemp("report") / "zoo")
    build(root, "report")
    return root


def test_report_holds_every_tested_build(reported):
    rows = json.loads((reported / "out/report/report.json").read_text())["rows"]
    assert [(r["model"], r["precision"], r["backend"]) for r in rows] == [
        ("adder", "fp32", "cpu"), ("adder", "w8a8", "cpu"), ("adder", "w8a8", "npu"), ("classifier", "fp32", "cpu")]
    for r in rows:
        test = read_test(reported / "out" / r["model"] / r["precision"] / r["backend"] / "test.json")
        assert r["sqnr_db"] == key_metrics(test)["sqnr_db"] and r["passed"] is True
        assert r["latency_us"] > 0 and r["latency_p90_us"] >= r["latency_us"] * 0.5 and r["init_us"] > 0
        page = reported / "out/report" / r["model"] / r["profile"]
        assert page.is_file() and json.loads((page.parent / "trace.json").read_text())["traceEvents"]
        if r["precision"] != "fp32":  # quantized builds get an accuracy-debug page
            assert (reported / "out/report" / r["model"] / r["debug"]).is_file()
    classifier = next(r for r in rows if r["model"] == "classifier")
    assert classifier["accuracy"] == key_metrics(read_test(reported / "out/classifier/fp32/cpu/test.json"))["accuracy"]


def check_the_htp_rows(root: Path, precision: str, soc: str, samples: int) -> None:
    """An htp slot's row of `scons report` (built in root): its test's SQNR and npu agreement, its three
    files' size, what it was finalized from (model.qdq.onnx) and its latency in HTP emulation over as
    many samples as its test. tests/htp/test_htp_build.py calls it on the htp zoo it builds (minutes of
    HTP preparation and emulation: one build for both)."""
    rows = {(r["precision"], r["backend"]): r for r in json.loads((root / "out/report/report.json").read_text())["rows"]}
    slot, folder = f"htp@{soc}", root / "out/adder" / precision / f"htp@{soc}"
    htp, npu = rows[(precision, slot)], rows[(precision, "npu")]
    metrics = key_metrics(read_test(folder / "test.json"))
    assert htp["sqnr_db"] == metrics["sqnr_db"] and htp["passed"] is True
    assert htp["agreement"] == metrics["agreement"] and htp["agreement"].startswith("npu ") and " dB " in htp["agreement"]
    assert htp["agreement"].endswith(" LSB") and npu.get("agreement") is None
    assert htp["context_size"] == human_size([folder / f"model.htp.{kind}" for kind in ("onnx", "bin", "json")])
    assert htp["source"].endswith(" model.qdq.onnx") and npu["source"].endswith(" libmodel.so")
    assert htp["latency_us"] > 0 and htp["init_us"] > 0 and "debug" not in htp  # accuracy-debug: our runtime's
    pages = root / "out/report/adder" / f"{precision}-{slot}"
    profile = json.loads((pages / "profile.json").read_text())
    assert profile["backend"] == "htp" and profile["num_inferences"] == samples
    assert any(sum(node["cycles"]) > 0 for node in profile["nodes"])  # QNN's per-node events
    assert "mean cycles" in (pages / "profile.html").read_text()
    page = (root / "out/report/index.html").read_text()
    assert f"<td>{slot}</td>" in page and htp["agreement"] in page


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip("no Chromium here (Debian: apt-get install chromium; .ci/run installs it)")


def _png_pixels(path: Path) -> tuple[int, int, bytes]:
    """Width, height and the decompressed scanlines of a PNG (enough to see it is not blank)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        length = int.from_bytes(data[pos:pos + 4], "big")
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = int.from_bytes(body[:4], "big"), int.from_bytes(body[4:8], "big")
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return width, height, zlib.decompress(idat)


def test_report_renders_in_chromium(reported, tmp_path):
    chromium = _chromium()
    page = (reported / "out/report/index.html").as_uri()
    common = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    shot = reported / "out/report/screenshot.png"
    r = subprocess.run([*common, "--window-size=1280,1400", f"--screenshot={shot}", page], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and shot.is_file(), r.stderr
    width, height, pixels = _png_pixels(shot)
    assert (width, height) == (1280, 1400)
    assert len(set(pixels[::97])) > 8  # text, bars and lines in several colours, not a blank page
    dom = subprocess.run([*common, "--dump-dom", page], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr
    html = dom.stdout
    assert html.count("<section") == 2 and html.count("<svg") == 4  # per model: SQNR and latency bars
    assert html.count("<rect") >= 2 * 4  # a bar per build in each chart, plus the legends
    assert 'href="adder/w8a8-npu/debug/index.html"' in html and 'href="classifier/fp32-cpu/profile.html"' in html
