"""The htp tests need Qualcomm's QNN libraries from onnxruntime-qnn; without them they are skipped
with the install line the htp steps print (the export tests run everywhere)."""

import pytest

from qnn_build.htp.ep import INSTALL, available


def pytest_collection_modifyitems(items):
    if available():
        return
    skip = pytest.mark.skip(reason=f"onnxruntime-qnn is not installed: {INSTALL}")
    for item in items:
        if "needs_qnn" in item.keywords:
            item.add_marker(skip)


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_qnn: runs Qualcomm's QNN HTP backend (onnxruntime-qnn)")
