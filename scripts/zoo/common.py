"""Shared helpers for the model-zoo scripts in scripts/zoo/.

Every zoo script trains a small model on scikit-learn's bundled `load_digits`
data set (1797 8x8 grayscale digits shipped inside the scikit-learn wheel, so
nothing is downloaded), exports it to ONNX, checks the export against torch and
writes models/<name>/{model.onnx,calibration.npz,test.npz}.

Torch is only needed to *regenerate* the zoo; the converter's build and tests
only read the committed files.

Data split (identical for every model, fixed seed): the 1797 samples are
shuffled with numpy RandomState(0); the first 1197 are the training set, the
next 200 the calibration set and the last 400 the test set.  The three sets
are disjoint, so calibration never sees test images.

npz layout: each key is an ONNX input name and holds an array of shape
[N, *input_shape_with_batch_1], i.e. `arr[i]` is one complete model input.
Classifiers add `labels` (int64 [N]); dense models add `target`
([N, *output_shape_with_batch_1]).
"""

import os
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS_DIR = os.path.join(REPO_ROOT, "models")

SPLIT_SEED = 0
N_TRAIN, N_CALIB, N_TEST = 1197, 200, 400
OPSET = 17
TOLERANCE = 1e-4


def setup(seed=0):
    """Deterministic, 2-thread torch so every rerun gives the same weights."""
    torch.set_num_threads(2)
    torch.manual_seed(seed)
    np.random.seed(seed)


def digits_split(size=8, channels=1):
    """Return {'train'|'calib'|'test': (x, y)} with x float32 [N, C, size, size] in [0, 1].

    Pixel values 0..16 are divided by 16, so they are exact in float32.  For
    size > 8 the images are upsampled bilinearly by an integer factor; the
    interpolation weights are then exact binary fractions too, which keeps the
    stored npz files small (they compress well) and bit-reproducible.
    """
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]  # [1797, 1, 8, 8]
    labels = digits.target.astype(np.int64)
    order = np.random.RandomState(SPLIT_SEED).permutation(len(images))
    images, labels = images[order], labels[order]
    if size != 8:
        images = F.interpolate(torch.from_numpy(images), size=(size, size),
                               mode="bilinear", align_corners=False).numpy()
    if channels != 1:
        images = np.repeat(images, channels, axis=1)
    images = np.ascontiguousarray(images, dtype=np.float32)
    a, b = N_TRAIN, N_TRAIN + N_CALIB
    return {
        "train": (images[:a], labels[:a]),
        "calib": (images[a:b], labels[a:b]),
        "test": (images[b:], labels[b:]),
    }


def train(model, x, y, loss_fn, epochs, lr=3e-3, batch_size=32, weight_decay=0.0,
          augment=None, seed=0):
    """Plain Adam training loop with a cosine learning-rate schedule.

    `augment(xb, generator)` may perturb a batch (training only).
    """
    x, y = torch.as_tensor(x), torch.as_tensor(y)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    steps = epochs * ((len(x) + batch_size - 1) // batch_size)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(len(x), generator=gen)
        total = 0.0
        for i in range(0, len(x), batch_size):
            idx = perm[i:i + batch_size]
            xb, yb = x[idx], y[idx]
            if augment is not None:
                xb = augment(xb, gen)
            loss = loss_fn(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        if epoch == epochs - 1 or (epoch + 1) % max(1, epochs // 5) == 0:
            print(f"  epoch {epoch + 1:3d}/{epochs}  loss {total / len(x):.4f}")
    model.eval()
    return model


def random_shift(max_shift=1):
    """Augmentation: roll each batch by up to `max_shift` pixels (digits are not centred perfectly)."""
    def fn(xb, gen):
        dx, dy = torch.randint(-max_shift, max_shift + 1, (2,), generator=gen).tolist()
        return torch.roll(xb, shifts=(dy, dx), dims=(-2, -1))
    return fn


@torch.no_grad()
def torch_predict(model, x, batch_size=200):
    model.eval()
    x = torch.as_tensor(x)
    return torch.cat([model(x[i:i + batch_size]) for i in range(0, len(x), batch_size)]).numpy()


def _inline_identity_initializers(model):
    """The TorchScript exporter deduplicates equal initializers and re-creates
    them with Identity nodes; turn those back into plain initializers so the
    graph holds only real compute ops."""
    inits = {i.name: i for i in model.graph.initializer}
    keep = []
    for node in model.graph.node:
        if node.op_type == "Identity" and node.input[0] in inits:
            copy = onnx.TensorProto()
            copy.CopyFrom(inits[node.input[0]])
            copy.name = node.output[0]
            model.graph.initializer.append(copy)
            inits[copy.name] = copy
        else:
            keep.append(node)
    del model.graph.node[:]
    model.graph.node.extend(keep)


def export(model, example, name, input_name, output_name, dynamic_batch=False):
    """Export with the TorchScript exporter at opset 17 and return the path.

    TrainingMode.PRESERVE (with the model in eval mode) keeps BatchNormalization
    as its own node (inference form, training_mode=0): the default EVAL mode would
    fold it into the preceding Conv, and the converter's BN folding is meant to be
    exercised by the zoo.
    """
    model.eval()
    out_dir = os.path.join(MODELS_DIR, name)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "model.onnx")
    dynamic_axes = None
    if dynamic_batch:
        dynamic_axes = {input_name: {0: "batch"}, output_name: {0: "batch"}}
    with warnings.catch_warnings():
        # The TorchScript exporter is deprecated in favour of dynamo; we want it anyway
        # (plain ONNX graph, no onnxscript functions).
        warnings.simplefilter("ignore", DeprecationWarning)
        # PRESERVE + constant folding is only risky for a model in training mode;
        # ours is in eval mode, and verify() checks the numbers anyway.
        warnings.filterwarnings("ignore", message="It is recommended that constant folding")
        # RNN initial states built from the input shape: verify() runs a full batch to prove they work.
        warnings.filterwarnings("ignore", message="Exporting a model to ONNX with a batch_size other than 1")
        torch.onnx.export(
            model, (example,), path,
            opset_version=OPSET, dynamo=False,
            input_names=[input_name], output_names=[output_name],
            dynamic_axes=dynamic_axes,
            training=torch.onnx.TrainingMode.PRESERVE,
            do_constant_folding=True,
        )
    proto = onnx.load(path)
    _inline_identity_initializers(proto)
    proto.producer_name = "qnn-build model zoo (scripts/zoo)"
    onnx.save(proto, path)
    onnx.checker.check_model(path, full_check=True)
    return path


def verify(model, path, x, dynamic_batch=False):
    """Run every sample of `x` ([N, 1, ...]) through onnxruntime one by one, and
    the whole set as one batch if the batch dim is dynamic; compare with torch.

    Returns the onnxruntime outputs [N, ...] (batch 1 runs), so the reported
    metric is that of the shipped ONNX file, not of the torch model.
    """
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    in_name = sess.get_inputs()[0].name
    ort_out = np.stack([sess.run(None, {in_name: xi})[0] for xi in x])  # [N, 1, ...]
    ref = torch_predict(model, x.reshape(-1, *x.shape[2:]))
    diff = np.abs(ort_out.reshape(ref.shape) - ref).max()
    print(f"  onnxruntime vs torch, batch 1 x {len(x)}: max abs diff {diff:.2e}")
    assert diff < TOLERANCE, diff
    if dynamic_batch:
        batched = sess.run(None, {in_name: x.reshape(-1, *x.shape[2:])})[0]
        diff = np.abs(batched - ref).max()
        print(f"  onnxruntime vs torch, batch {len(x)}: max abs diff {diff:.2e}")
        assert diff < TOLERANCE, diff
    return ort_out


def save_data(name, input_name, calib_x, test_x, **extra):
    """Write calibration.npz / test.npz; inputs get a batch-1 axis per sample."""
    out_dir = os.path.join(MODELS_DIR, name)
    calib = np.ascontiguousarray(calib_x[:, None], dtype=np.float32)
    test = np.ascontiguousarray(test_x[:, None], dtype=np.float32)
    np.savez_compressed(os.path.join(out_dir, "calibration.npz"), **{input_name: calib})
    np.savez_compressed(os.path.join(out_dir, "test.npz"), **{input_name: test}, **extra)
    return calib, test


def describe(name):
    """Print the facts models/README.md lists for one model."""
    out_dir = os.path.join(MODELS_DIR, name)
    proto = onnx.load(os.path.join(out_dir, "model.onnx"))

    def shape(v):
        return [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]

    for v in proto.graph.input:
        print(f"  input  {v.name} {shape(v)}")
    for v in proto.graph.output:
        print(f"  output {v.name} {shape(v)}")
    print(f"  ops    {sorted({n.op_type for n in proto.graph.node})}")
    params = sum(int(np.prod(i.dims)) for i in proto.graph.initializer)
    sizes = {f: os.path.getsize(os.path.join(out_dir, f)) for f in sorted(os.listdir(out_dir))}
    print(f"  params {params}  files " + ", ".join(f"{f} {s / 1024:.0f} KiB" for f, s in sizes.items()))
