"""digits_gru: GRU classifier reading scikit-learn digits row by row.

Like digits_lstm, but a single forward GRU (hidden 48) whose final hidden state
feeds a Linear classifier.  Trained 40 epochs with Adam on the 1197-image
training split (common.py: 1197 train / 200 calibration / 400 test, numpy
RandomState(0)).

ONNX: input `sequence` float32 [1, 8, 8] (static batch 1), output `logits`
[1, 10].  The ONNX GRU op is exported with linear_before_reset=1 (torch's GRU
formulation).  Even with the static batch, the zero initial state is computed
from the input's Shape (Shape/Gather/Expand), as torch exports it.

Result (onnxruntime on the 400 test sequences):
test accuracy 0.9850 (394/400); onnxruntime matches torch to < 1e-5.

Run from the repo root:  python scripts/zoo/digits_gru.py
"""

import time

import torch
from torch import nn

import common

NAME = "digits_gru"


class DigitsGRU(nn.Module):
    def __init__(self, hidden=48):
        super().__init__()
        self.rnn = nn.GRU(8, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 10)

    def forward(self, seq):  # seq [B, 8 steps, 8 features]
        _, h = self.rnn(seq)  # h [1 layer, B, hidden]
        return self.head(h[0])


def main():
    start = time.time()
    common.setup(0)
    data = common.digits_split(size=8)
    rows = {k: (x[:, 0], y) for k, (x, y) in data.items()}  # [N, 8, 8]
    model = DigitsGRU()
    common.train(model, *rows["train"], nn.CrossEntropyLoss(), epochs=40, lr=5e-3)

    path = common.export(model, torch.zeros(1, 8, 8), NAME, "sequence", "logits")
    calib, test = common.save_data(NAME, "sequence", rows["calib"][0], rows["test"][0],
                                   labels=rows["test"][1])
    logits = common.verify(model, path, test)
    acc = (logits.reshape(len(test), -1).argmax(1) == rows["test"][1]).mean()
    print(f"{NAME}: test accuracy {acc:.4f} ({len(test)} sequences), {time.time() - start:.0f} s")
    common.describe(NAME)


if __name__ == "__main__":
    main()
