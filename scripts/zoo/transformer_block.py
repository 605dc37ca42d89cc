"""transformer_block: one pre-norm transformer encoder block + classifier on digits tokens.

Data: digits upsampled bilinearly 8x8 -> 16x16, cut into a 4x4 grid of 4x4
patches (16 tokens of 16 pixels, row-major), each projected by a learned
Linear(16, 32) patch embedding to a 32-dim token.
The exported model starts *after* the patch embedding, so its input is the
token matrix [1, 16, 32]: the script computes the calibration/test tokens
with the trained embedding.  Model: + learned position embedding, then
x + MHSA(LayerNorm(x)) with 4 heads written out with MatMul (Q K^T * 1/sqrt(8),
Softmax, weights V), then x + MLP(LayerNorm(x)) with a 32-64-32 GELU MLP,
final LayerNorm, mean over tokens, Linear classifier.
Patch embedding and block are trained together, 80 epochs of Adam with +-1
pixel shifts, on the 1197-image training split (common.py: 1197 train / 200
calibration / 400 test, numpy RandomState(0)).

ONNX: input `tokens` float32 [1, 16, 32] (static), output `logits` [1, 10].
LayerNormalization is a real ONNX op at opset 17; GELU is exported as Erf-based
math (Div, Erf, Add, Mul) because the Gelu op only exists from opset 20.

Result (onnxruntime on the 400 test token sets):
test accuracy 0.9850 (394/400); onnxruntime matches torch to < 1e-5.

Run from the repo root:  python scripts/zoo/transformer_block.py
"""

import math
import time

import torch
from torch import nn

import common

NAME = "transformer_block"
TOKENS, PATCH_PIXELS, DIM, HEADS = 16, 16, 32, 4


def patchify(images):
    """[B, 1, 16, 16] -> [B, 16 tokens, 16 pixels], 4x4 patches in row-major order."""
    b = images.shape[0]
    x = images.reshape(b, 4, 4, 4, 4)  # [B, patch_row, y, patch_col, x]
    return x.permute(0, 1, 3, 2, 4).reshape(b, TOKENS, PATCH_PIXELS)


class SelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.scale = 1.0 / math.sqrt(self.head_dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):  # x [B, T, D]
        b, t, d = x.shape
        qkv = self.qkv(x).reshape(b, t, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # each [B, H, T, head_dim]
        attn = torch.softmax((q @ k.transpose(-2, -1)) * self.scale, dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(out)


class EncoderClassifier(nn.Module):
    """The exported part: tokens [B, 16, 32] -> logits [B, 10]."""

    def __init__(self):
        super().__init__()
        self.pos = nn.Parameter(torch.zeros(1, TOKENS, DIM))
        self.norm1 = nn.LayerNorm(DIM)
        self.attn = SelfAttention(DIM, HEADS)
        self.norm2 = nn.LayerNorm(DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 2 * DIM), nn.GELU(), nn.Linear(2 * DIM, DIM))
        self.norm_out = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, 10)

    def forward(self, tokens):
        x = tokens + self.pos
        x = x + self.attn(self.norm1(x))
        x = x + self.mlp(self.norm2(x))
        return self.head(self.norm_out(x).mean(dim=1))


class PatchTransformer(nn.Module):
    """Training wrapper: images -> patch embedding -> EncoderClassifier."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(PATCH_PIXELS, DIM)
        self.encoder = EncoderClassifier()
        nn.init.normal_(self.encoder.pos, std=0.02)

    def tokens(self, images):
        return self.embed(patchify(images))

    def forward(self, images):
        return self.encoder(self.tokens(images))


def main():
    start = time.time()
    common.setup(0)
    data = common.digits_split(size=16)
    x_train, y_train = data["train"]
    model = PatchTransformer()
    common.train(model, x_train, y_train, nn.CrossEntropyLoss(), epochs=80, lr=2e-3,
                 weight_decay=1e-4, augment=common.random_shift(1))

    with torch.no_grad():
        calib_tokens = model.tokens(torch.from_numpy(data["calib"][0])).numpy()
        test_tokens = model.tokens(torch.from_numpy(data["test"][0])).numpy()
    encoder = model.encoder.eval()
    path = common.export(encoder, torch.zeros(1, TOKENS, DIM), NAME, "tokens", "logits")
    calib, test = common.save_data(NAME, "tokens", calib_tokens, test_tokens,
                                   labels=data["test"][1])
    logits = common.verify(encoder, path, test)
    acc = (logits.reshape(len(test), -1).argmax(1) == data["test"][1]).mean()
    print(f"{NAME}: test accuracy {acc:.4f} ({len(test)} token sets), {time.time() - start:.0f} s")
    common.describe(NAME)


if __name__ == "__main__":
    main()
