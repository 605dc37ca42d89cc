"""digits_lstm: bidirectional LSTM classifier reading scikit-learn digits row by row.

Each 8x8 digit is a sequence of 8 time steps (the rows) of 8 features (the
pixels of a row).  A 1-layer bidirectional LSTM (hidden 32 per direction) runs
over it and a Linear layer classifies the last time step's output (forward
state after row 8 concatenated with backward state after reading rows 8..1).
Trained 40 epochs with Adam on the 1197-image training split (common.py: 1197
train / 200 calibration / 400 test, numpy RandomState(0)).

ONNX: input `sequence` float32 [batch, 8, 8] (batch-first, dynamic batch),
output `logits` [batch, 10].  The exporter wraps the (sequence-first) ONNX LSTM
op in Transpose/Squeeze/Slice ops; with a dynamic batch the zero initial states
are built from Shape/Gather/ConstantOfShape, which `--input-dim` pinning should
let the converter fold.

Result (onnxruntime on the 400 test sequences):
test accuracy 0.9675 (387/400); onnxruntime matches torch to < 1e-5.

Run from the repo root:  python scripts/zoo/digits_lstm.py
"""

import time

import torch
from torch import nn

import common

NAME = "digits_lstm"


class DigitsLSTM(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.rnn = nn.LSTM(8, hidden, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, 10)

    def forward(self, seq):  # seq [B, 8 steps, 8 features]
        out, _ = self.rnn(seq)
        return self.head(out[:, -1])


def main():
    start = time.time()
    common.setup(0)
    data = common.digits_split(size=8)
    rows = {k: (x[:, 0], y) for k, (x, y) in data.items()}  # drop the channel axis: [N, 8, 8]
    model = DigitsLSTM()
    common.train(model, *rows["train"], nn.CrossEntropyLoss(), epochs=40, lr=5e-3)

    path = common.export(model, torch.zeros(1, 8, 8), NAME, "sequence", "logits",
                         dynamic_batch=True)
    calib, test = common.save_data(NAME, "sequence", rows["calib"][0], rows["test"][0],
                                   labels=rows["test"][1])
    logits = common.verify(model, path, test, dynamic_batch=True)
    acc = (logits.reshape(len(test), -1).argmax(1) == rows["test"][1]).mean()
    print(f"{NAME}: test accuracy {acc:.4f} ({len(test)} sequences), {time.time() - start:.0f} s")
    common.describe(NAME)


if __name__ == "__main__":
    main()
