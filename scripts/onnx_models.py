#!/usr/bin/python3
"""Export PyTorch models to ONNX in the backend-test layout, for Hora's importer.

Usage (Debian's python3-torch, python3-torchvision and python3-onnx):

    /usr/bin/python3 scripts/onnx_models.py OUT_DIR [--only NAME,...] [--bench]

For every model it writes

    OUT_DIR/<name>/model.onnx
    OUT_DIR/<name>/test_data_set_0/input_0.pb, output_0.pb   (batch 2)
    OUT_DIR/<name>/test_data_set_1/input_0.pb, output_0.pb   (batch 3)

so that `go run ./cmd/onnxcheck OUT_DIR/*` and onnx/pytorch_test.go run them.
The second data set has another batch size than the export, which checks the
dynamic batch axis. Weights are random but seeded (crc32 of the model's name),
BatchNorm running statistics are randomized too (otherwise eval-mode
BatchNorm is the identity), and the models are exported in eval mode; running
the script twice writes identical files.

--bench writes the benchmark models instead (resnet18 and mobilenet_v2 at
3x224x224, opset 17, no test data): OUT_DIR/<name>.onnx, for bench/onnx.
"""

import argparse
import inspect
import os
import sys
import zlib

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import numpy_helper

torch.set_num_threads(2)


def seed(name):
    torch.manual_seed(zlib.crc32(name.encode()))


def randomize_bn(model, gen):
    """Gives every BatchNorm random running statistics and affine parameters."""
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            n = m.num_features
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=gen) * 0.5 + 0.75)
                if m.affine:
                    m.weight.copy_(torch.rand(n, generator=gen) * 0.5 + 0.75)
                    m.bias.copy_(torch.randn(n, generator=gen) * 0.1)


class VGGSmall(nn.Module):
    """A small VGG-style CNN: conv-bn-relu blocks, max pooling, dropout, two linear layers."""

    def __init__(self, classes=10):
        super().__init__()
        cfg = [16, 16, "M", 32, 32, "M", 64, "M"]
        layers, c = [], 3
        for v in cfg:
            if v == "M":
                layers.append(nn.MaxPool2d(2))
            else:
                layers += [nn.Conv2d(c, v, 3, padding=1), nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
                c = v
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(64 * 4 * 4, 128), nn.ReLU(inplace=True), nn.Dropout(0.5), nn.Linear(128, classes))

    def forward(self, x):
        return self.classifier(self.features(x))


class MLP(nn.Module):
    """An MLP with a BatchNorm1d (which stays a BatchNormalization node: only Conv+BN is fused on export)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Flatten(), nn.Linear(784, 256), nn.BatchNorm1d(256), nn.ReLU(), nn.Linear(256, 128), nn.Tanh(),
            nn.Linear(128, 64), nn.GELU(), nn.Linear(64, 10), nn.LogSoftmax(dim=1))

    def forward(self, x):
        return self.net(x)


class TransformerClassifier(nn.Module):
    """Token embedding + learned positions, a 2-layer TransformerEncoder (batch_first), mean pooling, linear head."""

    def __init__(self, vocab=100, d=32, heads=4, layers=2, seq=16, classes=5):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, seq, d) * 0.1)
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=64, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, classes)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos
        x = self.encoder(x)
        return self.head(x.mean(dim=1))


class LSTMClassifier(nn.Module):
    """Embedding, a 1-layer LSTM (batch_first), the last hidden state into a linear head."""

    def __init__(self, vocab=100, d=16, hidden=32, classes=5):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, hidden, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, tokens):
        out, (h, c) = self.lstm(self.embed(tokens))
        return self.head(h[-1]) + self.head(out.mean(dim=1))


class Video3D(nn.Module):
    """A small 3-D CNN (video clips): Conv3d with groups, stride, padding and
    dilation, max and average 3-D pooling (padding not counted, then
    counted), a linear head."""

    def __init__(self, classes=5):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv3d(3, 8, 3, padding=1), nn.ReLU(),
            nn.MaxPool3d(2, stride=2, padding=1),
            nn.Conv3d(8, 16, (3, 3, 3), stride=(1, 2, 2), padding=(2, 1, 1), dilation=(2, 1, 1), groups=2), nn.ReLU6(),
            nn.AvgPool3d(3, stride=2, padding=1, count_include_pad=False),
            nn.AvgPool3d((1, 2, 2), stride=1, padding=(0, 1, 1), count_include_pad=True),
            nn.Flatten(), nn.Linear(16 * 3 * 4 * 4, classes))

    def forward(self, x):
        return self.net(x)


def tv(name, **kw):
    import torchvision.models as tvm
    return getattr(tvm, name)(weights=None, **kw)


# name -> (constructor, input shape without the batch axis, input kind, opset)
# The float CNNs take N(0,1) images; the token models take int64 ids in [0, 100).
MODELS = {
    "resnet18": (lambda: tv("resnet18", num_classes=10), (3, 64, 64), "image", 17),
    "mobilenet_v2": (lambda: tv("mobilenet_v2", num_classes=10), (3, 64, 64), "image", 13),
    "squeezenet1_1": (lambda: tv("squeezenet1_1", num_classes=10), (3, 64, 64), "image", 13),
    "shufflenet_v2_x0_5": (lambda: tv("shufflenet_v2_x0_5", num_classes=10), (3, 64, 64), "image", 17),
    "efficientnet_b0": (lambda: tv("efficientnet_b0", num_classes=10), (3, 64, 64), "image", 17),
    "vgg_small": (VGGSmall, (3, 32, 32), "image", 13),
    "mlp_op13": (MLP, (1, 28, 28), "image", 13),
    "mlp_op17": (MLP, (1, 28, 28), "image", 17),
    "transformer_op13": (TransformerClassifier, (16,), "tokens", 13),
    "transformer_op17": (TransformerClassifier, (16,), "tokens", 17),
    "lstm_op13": (LSTMClassifier, (12,), "tokens", 13),
    "lstm_op17": (LSTMClassifier, (12,), "tokens", 17),
    "video3d": (Video3D, (3, 8, 16, 16), "image", 17),
}

BENCH_MODELS = {
    "resnet18": lambda: tv("resnet18"),
    "mobilenet_v2": lambda: tv("mobilenet_v2"),
}


def make_input(name, shape, kind, batch, gen):
    if kind == "tokens":
        return torch.randint(0, 100, (batch,) + shape, generator=gen, dtype=torch.int64)
    return torch.randn((batch,) + shape, generator=gen)


def export(model, x, path, opset):
    kwargs = {}
    # PyTorch 2.9 and later export with dynamo by default, which writes at
    # least opset 18 whatever opset_version says; the TorchScript exporter
    # (dynamo=False) keeps the opset asked for.
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False
    torch.onnx.export(
        model, x, path, opset_version=opset, input_names=["input"], output_names=["output"],
        dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, do_constant_folding=True, **kwargs)
    onnx.checker.check_model(onnx.load(path))


def write_pb(arr, path):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(arr)).SerializeToString())


def write_case(out, name):
    make, shape, kind, opset = MODELS[name]
    seed(name)
    model = make()
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()) + 1)
    randomize_bn(model, gen)
    model.eval()
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    # Exported with gradients enabled: in eval mode under no_grad,
    # TransformerEncoderLayer takes a fused fast path that has no ONNX export.
    export(model, make_input(name, shape, kind, 2, gen), os.path.join(d, "model.onnx"), opset)
    with torch.no_grad():
        for i, batch in enumerate((2, 3)):
            x = make_input(name, shape, kind, batch, gen)
            y = model(x)
            sd = os.path.join(d, "test_data_set_%d" % i)
            os.makedirs(sd, exist_ok=True)
            write_pb(x.numpy(), os.path.join(sd, "input_0.pb"))
            write_pb(y.numpy(), os.path.join(sd, "output_0.pb"))


def write_bench(out, name):
    seed(name)
    model = BENCH_MODELS[name]()
    model.eval()
    os.makedirs(out, exist_ok=True)
    with torch.no_grad():
        export(model, torch.randn(1, 3, 224, 224), os.path.join(out, name + ".onnx"), 17)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--only", default="", help="comma-separated model names (default: all)")
    ap.add_argument("--bench", action="store_true", help="write the 224x224 benchmark models")
    args = ap.parse_args()
    table = BENCH_MODELS if args.bench else MODELS
    names = [n for n in args.only.split(",") if n] or list(table)
    for n in names:
        if n not in table:
            sys.exit("onnx_models.py: unknown model %r (known: %s)" % (n, ", ".join(table)))
    for n in names:
        (write_bench if args.bench else write_case)(args.out, n)
        print(n, file=sys.stderr)


if __name__ == "__main__":
    main()
