"""digits_cnn: small CNN classifier on scikit-learn digits (8x8 grayscale).

Trains Conv-BN-ReLU x2 -> MaxPool -> Flatten -> Gemm-ReLU -> Gemm on the
1197-image training split (see common.py: 1197 train / 200 calibration /
400 test, numpy RandomState(0)), 30 epochs of Adam with +-1 pixel shifts.

ONNX: input `image` float32 [batch, 1, 8, 8] (dynamic batch), output `logits`
[batch, 10].  BatchNormalization is kept as its own node so the converter's BN
folding is exercised.

Result (onnxruntime on the 400 test images):
test accuracy 0.9825 (393/400); onnxruntime matches torch to < 1e-5.

Run from the repo root:  python scripts/zoo/digits_cnn.py
"""

import time

import torch
from torch import nn

import common

NAME = "digits_cnn"


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.MaxPool2d(2),  # 8x8 -> 4x4
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(32 * 4 * 4, 64), nn.ReLU(),
            nn.Linear(64, 10),
        )

    def forward(self, x):
        return self.classifier(self.features(x))


def main():
    start = time.time()
    common.setup(0)
    data = common.digits_split(size=8)
    x_train, y_train = data["train"]
    model = DigitsCNN()
    common.train(model, x_train, y_train, nn.CrossEntropyLoss(), epochs=30, lr=3e-3,
                 augment=common.random_shift(1))

    path = common.export(model, torch.zeros(1, 1, 8, 8), NAME, "image", "logits",
                         dynamic_batch=True)
    calib, test = common.save_data(NAME, "image", data["calib"][0], data["test"][0],
                                   labels=data["test"][1])
    logits = common.verify(model, path, test, dynamic_batch=True)
    acc = (logits.reshape(len(test), -1).argmax(1) == data["test"][1]).mean()
    print(f"{NAME}: test accuracy {acc:.4f} ({len(test)} images), {time.time() - start:.0f} s")
    common.describe(NAME)


if __name__ == "__main__":
    main()
