"""mobile_tiny: reduced-width MobileNetV3-style backbone trained on scikit-learn digits.

Input: digits upsampled bilinearly 8x8 -> 32x32 and replicated to 3 channels
(an RGB-like image).  Architecture, MobileNetV3-Small in miniature:
stem Conv3x3/2 + BN + HardSwish, five inverted-residual blocks (1x1 expand,
depthwise 3x3 or 5x5, optional squeeze-excite with HardSigmoid gating, 1x1
linear projection, residual Add when shapes allow), 1x1 Conv + HardSwish,
global average pool, Linear + HardSwish, Linear classifier.
Trained 25 epochs with Adam on the 1197-image training split (common.py: 1197
train / 200 calibration / 400 test, numpy RandomState(0)) with +-2 pixel shifts.

ONNX: input `image` float32 [1, 3, 32, 32] (static), output `logits` [1, 10].
BatchNormalization is kept as separate nodes after every Conv.

Result (onnxruntime on the 400 test images):
test accuracy 0.9950 (398/400); onnxruntime matches torch to < 2e-5.

Run from the repo root:  python scripts/zoo/mobile_tiny.py
"""

import time

import torch
from torch import nn

import common

NAME = "mobile_tiny"


def conv_bn(cin, cout, k, stride=1, groups=1, act=None):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class SqueezeExcite(nn.Module):
    def __init__(self, ch, reduce=4):
        super().__init__()
        squeezed = max(8, ch // reduce)
        self.pool = nn.AdaptiveAvgPool2d(1)  # -> GlobalAveragePool
        self.fc1 = nn.Conv2d(ch, squeezed, 1)
        self.fc2 = nn.Conv2d(squeezed, ch, 1)
        self.relu = nn.ReLU()
        self.gate = nn.Hardsigmoid()

    def forward(self, x):
        return x * self.gate(self.fc2(self.relu(self.fc1(self.pool(x)))))


class InvertedResidual(nn.Module):
    def __init__(self, cin, expand, cout, k, stride, se, act):
        super().__init__()
        layers = []
        if expand != cin:
            layers.append(conv_bn(cin, expand, 1, act=act))
        layers.append(conv_bn(expand, expand, k, stride, groups=expand, act=act))  # depthwise
        if se:
            layers.append(SqueezeExcite(expand))
        layers.append(conv_bn(expand, cout, 1))  # linear bottleneck, no activation
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.block(x)
        return x + y if self.residual else y


class MobileTiny(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        hs, relu = nn.Hardswish, nn.ReLU
        self.features = nn.Sequential(
            conv_bn(3, 16, 3, 2, act=hs),                        # 32 -> 16
            InvertedResidual(16, 16, 16, 3, 2, True, relu),      # 16 -> 8
            InvertedResidual(16, 48, 24, 3, 2, False, relu),     # 8 -> 4
            InvertedResidual(24, 72, 24, 3, 1, False, relu),     # residual
            InvertedResidual(24, 96, 40, 5, 2, True, hs),        # 4 -> 2
            InvertedResidual(40, 120, 40, 5, 1, True, hs),       # residual
            conv_bn(40, 96, 1, act=hs),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(96, 128), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(128, num_classes),
        )

    def forward(self, x):
        return self.classifier(self.pool(self.features(x)))


def main():
    start = time.time()
    common.setup(0)
    data = common.digits_split(size=32, channels=3)
    x_train, y_train = data["train"]
    model = MobileTiny()
    common.train(model, x_train, y_train, nn.CrossEntropyLoss(), epochs=25, lr=3e-3,
                 weight_decay=1e-4, augment=common.random_shift(2))

    path = common.export(model, torch.zeros(1, 3, 32, 32), NAME, "image", "logits")
    calib, test = common.save_data(NAME, "image", data["calib"][0], data["test"][0],
                                   labels=data["test"][1])
    logits = common.verify(model, path, test)
    acc = (logits.reshape(len(test), -1).argmax(1) == data["test"][1]).mean()
    print(f"{NAME}: test accuracy {acc:.4f} ({len(test)} images), {time.time() - start:.0f} s")
    common.describe(NAME)


if __name__ == "__main__":
    main()
