"""model.bin (codegen/weights.py): every tensor reads back as written, and tensors with the same
bytes share one payload (an unrolled loop's copies of a weight), whatever their shape, while
others of the same length do not."""

import numpy as np

from qnn_build.codegen.weights import pack_weights, read_weights


def test_equal_tensors_share_a_payload_and_all_read_back():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 8)).astype(np.float32)
    tensors = [("w0", w, False), ("other", rng.standard_normal((4, 8)).astype(np.float32), False),
               ("w1", w.copy(), False), ("flat", w.reshape(-1).copy(), False), ("small", w[:1].copy(), False),
               ("ints", np.arange(32, dtype=np.int32), False), ("w2", w.copy(), False),
               ("q4", rng.integers(-8, 8, 7).astype(np.int8), True)]
    data, entries = pack_weights(tensors)
    back = read_weights(data)
    for name, value, _ in tensors:
        np.testing.assert_array_equal(back[name], value, err_msg=name)
        assert back[name].dtype == value.dtype and back[name].shape == value.shape, name
    shared = {entries[n].offset for n in ("w0", "w1", "flat", "w2")}
    assert len(shared) == 1  # the same bytes, whatever the shape
    assert len({entries[n].offset for n in ("w0", "other", "small", "ints", "q4")}) == 5
    assert all(e.offset % 64 == 0 for e in entries.values())
