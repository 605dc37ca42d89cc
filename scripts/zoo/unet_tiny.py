"""unet_tiny: small U-Net that denoises scikit-learn digits (16x16).

Task: the digits are upsampled bilinearly 8x8 -> 16x16 (clean target in
[0, 1]); the input is the clean image plus Gaussian noise (sigma 0.3), clipped
to [0, 1].  The net predicts the clean image (Sigmoid output, MSE loss).
Training draws fresh noise every batch (torch seed 0); the calibration and
test inputs use fixed noise from numpy RandomState(1).  Split as everywhere
(common.py: 1197 train / 200 calibration / 400 test, numpy RandomState(0)).

Architecture: encoder Conv-BN-ReLU at 16x16 and 8x8 (MaxPool between), a 4x4
bottleneck, decoder upsampling 4->8 with nn.Upsample (ONNX Resize, nearest)
and 8->16 with ConvTranspose2d (k2, s2), each followed by a skip Concat with
the encoder feature map of the same size, then a 1x1 Conv + Sigmoid.

ONNX: input `noisy` float32 [batch, 1, 16, 16] (dynamic batch), output
`denoised` [batch, 1, 16, 16].  test.npz has `noisy` and `target` (the clean
images), both [N, 1, 1, 16, 16].

Result (onnxruntime on the 400 test images):
PSNR 23.08 dB (MSE 0.00492) against the clean
images, versus 12.60 dB (MSE 0.0549) for the noisy input itself;
onnxruntime matches torch to < 1e-6.

Run from the repo root:  python scripts/zoo/unet_tiny.py
"""

import time

import numpy as np
import torch
from torch import nn

import common

NAME = "unet_tiny"
SIGMA = 0.3


def conv_bn_relu(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class UNetTiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc1 = conv_bn_relu(1, 16)           # 16x16
        self.enc2 = conv_bn_relu(16, 32)          # 8x8
        self.bottleneck = conv_bn_relu(32, 64)    # 4x4
        self.pool = nn.MaxPool2d(2)
        self.up1 = nn.Upsample(scale_factor=2, mode="nearest")  # 4 -> 8, ONNX Resize
        self.dec1 = conv_bn_relu(64 + 32, 32)
        self.up2 = nn.ConvTranspose2d(32, 16, 2, stride=2)       # 8 -> 16, learned upsampling
        self.dec2 = conv_bn_relu(16 + 16, 16)
        self.out = nn.Conv2d(16, 1, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        b = self.bottleneck(self.pool(e2))
        d1 = self.dec1(torch.cat([self.up1(b), e2], dim=1))
        d2 = self.dec2(torch.cat([self.up2(d1), e1], dim=1))
        return torch.sigmoid(self.out(d2))


def add_noise_torch(clean, gen):
    return (clean + SIGMA * torch.randn(clean.shape, generator=gen)).clamp(0, 1)


def add_noise_numpy(clean, rng):
    return np.clip(clean + SIGMA * rng.standard_normal(clean.shape), 0, 1).astype(np.float32)


def psnr(pred, target):
    mse = ((pred - target) ** 2).mean()
    return 10 * np.log10(1.0 / mse), mse


def main():
    start = time.time()
    common.setup(0)
    data = common.digits_split(size=16)
    clean_train = data["train"][0]
    model = UNetTiny()
    # train() feeds augment(x_batch) to the model and compares with y_batch: pass the clean
    # images as both, and let the augment hook make the noisy input (fresh noise each batch).
    common.train(model, clean_train, clean_train, nn.MSELoss(), epochs=30, lr=3e-3,
                 augment=add_noise_torch)

    rng = np.random.RandomState(1)
    calib_noisy = add_noise_numpy(data["calib"][0], rng)
    test_clean = data["test"][0]
    test_noisy = add_noise_numpy(test_clean, rng)

    path = common.export(model, torch.zeros(1, 1, 16, 16), NAME, "noisy", "denoised",
                         dynamic_batch=True)
    calib, test = common.save_data(NAME, "noisy", calib_noisy, test_noisy,
                                   target=test_clean[:, None])
    pred = common.verify(model, path, test, dynamic_batch=True)
    base_psnr, base_mse = psnr(test_noisy, test_clean)
    out_psnr, out_mse = psnr(pred.reshape(test_clean.shape), test_clean)
    print(f"{NAME}: test PSNR {out_psnr:.2f} dB (MSE {out_mse:.5f}); noisy input {base_psnr:.2f} dB "
          f"(MSE {base_mse:.5f}), {time.time() - start:.0f} s")
    common.describe(NAME)


if __name__ == "__main__":
    main()
