"""The package's import contracts ([tool.importlinter] in pyproject.toml, docs/pipeline.md): each
package imports only the layers below it, and no import cycle exists, between packages or between
the modules of one. The checker is import-linter; a copy of the package with a deliberate cycle shows
it really refuses one."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT = "import sys; from importlinter import cli; sys.exit(cli.lint_imports(no_cache=True))"


def lint(project: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", LINT], cwd=project, capture_output=True, text=True,
                          env={"PATH": "", "PYTHONPATH": str(project)})


def test_the_layers_hold_and_nothing_imports_in_a_cycle():
    r = lint(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_deliberate_cycle_is_refused(tmp_path):
    shutil.copytree(ROOT / "qnn_build", tmp_path / "qnn_build", ignore=shutil.ignore_patterns("runtime", "__pycache__"))
    shutil.copytree(ROOT / "qnn_build/runtime", tmp_path / "qnn_build/runtime", ignore=shutil.ignore_patterns(
        "*.cpp", "*.h", "third_party", "__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    ranges = tmp_path / "qnn_build/quant/ranges.py"
    ranges.write_text(ranges.read_text() + "\nfrom ..convert import convert  # quant -> convert -> quant\n")
    r = lint(tmp_path)
    assert r.returncode == 1
    assert "qnn_build.quant is not allowed to import qnn_build.convert" in r.stdout
    assert "- .quant -> .convert (1 import)" in r.stdout


def test_the_steps_that_load_a_library_do_not_import_onnx():
    """net-run, test and context-binary load a library or a context and never read an ONNX file:
    importing onnx would cost each such step about a CPU-second (data/dtypes.py)."""
    code = ("import sys, qnn_build.cli, qnn_build.backends, qnn_build.runtime.netrun, qnn_build.report.testrun, "
            "qnn_build.runtime.ctx_info; print(sorted(m for m in sys.modules if m.split('.')[0] == 'onnx'))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]", r.stdout
