#!/usr/bin/python3
"""Generate PyTorch golden fixtures for the model zoo (package models).

Run from the repository root with Debian's PyTorch and torchvision:

    /usr/bin/python3 scripts/golden/models_gen.py

Writes models/testdata/<case>.json, one file per small network:

  config        the network's Go configuration (ResNetConfig / MobileNetConfig)
  state         the state dict (parameters and buffers) loaded into Hora
  input         an N x C x H x W input
  grad_output   the weights G of the scalar sum(output * G) that is
                differentiated (a random G catches more than sum(output))
  eval, train   for each mode, from the same initial state: output,
                grad_input, grad_params (every parameter), and for train the
                running statistics after the forward pass (buffers_after)

models/testdata/resnet18_state_shapes.json: the name and shape of every
entry of torchvision's resnet18 state dict, and
models/testdata/param_counts.json: the number of parameters of
torchvision's resnet18/34/50 (1000 classes, 3 channels) and of the CIFAR
ResNet-20/56 (10 classes, 3 channels, 1x1-convolution shortcuts).

Tensors are encoded as in scripts/golden/gen.py ({"shape", "dtype", "data"}).
Every case seeds torch.manual_seed(crc32(case)), so the output is
deterministic and independent of the order of the cases.
"""

import json
import os
import zlib

import torch
import torch.nn as nn
import torchvision
from torchvision.models.resnet import BasicBlock, Bottleneck, conv1x1

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT_DIR = os.path.join(ROOT, "models", "testdata")

torch.set_num_threads(1)  # deterministic reductions on CPU


def enc(t):
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.float32:
        return {"shape": list(t.shape), "dtype": "float32",
                "data": [float(x) for x in t.reshape(-1).tolist()]}
    if t.dtype == torch.int64:
        return {"shape": list(t.shape), "dtype": "int64",
                "data": [int(x) for x in t.reshape(-1).tolist()]}
    raise TypeError("unsupported dtype %s" % t.dtype)


def seed_for(name):
    return zlib.crc32(name.encode("utf-8")) & 0x7FFFFFFF


def write(name, obj):
    os.makedirs(OUT_DIR, exist_ok=True)
    path = os.path.join(OUT_DIR, name + ".json")
    with open(path, "w") as f:
        json.dump(obj, f, separators=(",", ":"), allow_nan=False)
        f.write("\n")
    print("wrote", os.path.relpath(path, ROOT))


class RefResNet(nn.Module):
    """torchvision's ResNet with free widths, depth, input channels and stem.

    The module names (conv1, bn1, layerN.i.*, downsample.0/1, fc) are
    torchvision's, so the state dict of RefResNet(BasicBlock, [2,2,2,2],
    [64,128,256,512], 3, 1000, "imagenet") is resnet18's.
    """

    def __init__(self, block, layers, widths, in_channels, classes, stem):
        super().__init__()
        self.inplanes = widths[0]
        if stem == "imagenet":
            self.conv1 = nn.Conv2d(in_channels, widths[0], 7, 2, 3, bias=False)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
        else:
            self.conv1 = nn.Conv2d(in_channels, widths[0], 3, 1, 1, bias=False)
            self.maxpool = nn.Identity()
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        self.stages = []
        for i, (n, w) in enumerate(zip(layers, widths)):
            name = "layer%d" % (i + 1)
            setattr(self, name, self._make_layer(block, w, n, 1 if i == 0 else 2))
            self.stages.append(name)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(self.inplanes, classes)

    def _make_layer(self, block, planes, blocks, stride):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * block.expansion, stride),
                nn.BatchNorm2d(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for name in self.stages:
            x = getattr(self, name)(x)
        return self.fc(torch.flatten(self.avgpool(x), 1))


def ref_mobilenet(in_channels, classes, widths, strides):
    """MobileNet (v1 style): features.0 is the stem conv-BN-ReLU6, features.i
    (i >= 1) a depthwise-separable block (0 depthwise conv, 1 BN, 2 ReLU6,
    3 pointwise conv, 4 BN, 5 ReLU6); classifier is pool, flatten, linear."""
    feats = [nn.Sequential(
        nn.Conv2d(in_channels, widths[0], 3, strides[0], 1, bias=False),
        nn.BatchNorm2d(widths[0]), nn.ReLU6())]
    for i in range(1, len(widths)):
        c, o, s = widths[i - 1], widths[i], strides[i]
        feats.append(nn.Sequential(
            nn.Conv2d(c, c, 3, s, 1, groups=c, bias=False), nn.BatchNorm2d(c), nn.ReLU6(),
            nn.Conv2d(c, o, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU6()))
    m = nn.Module()
    m.features = nn.Sequential(*feats)
    m.classifier = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(widths[-1], classes))
    m.forward = lambda x: m.classifier(m.features(x))
    return m


def randomize(model, bias_std):
    """Non-trivial BN affine parameters and running statistics. A large
    bias_std pushes some channels past 6, so that ReLU6 clips."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.copy_(torch.rand_like(m.weight) + 0.5)
                m.bias.copy_(torch.randn_like(m.bias) * bias_std)
                m.running_mean.copy_(torch.randn_like(m.running_mean) * 0.3)
                m.running_var.copy_(torch.rand_like(m.running_var) + 0.5)


def model_case(case, config, build, input_shape, bias_std=0.2):
    torch.manual_seed(seed_for(case))
    model = build()
    randomize(model, bias_std)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.randn(*input_shape)
    out_shape = model.eval()(x).shape
    g = torch.randn(out_shape)
    fixture = {"case": case, "config": config,
               "state": {k: enc(v) for k, v in state.items()},
               "input": enc(x), "grad_output": enc(g)}
    for mode in ("eval", "train"):
        model.load_state_dict(state)
        model.train(mode == "train")
        model.zero_grad()
        xi = x.clone().requires_grad_(True)
        acts, hooks = record_relu6(model)
        y = model(xi)
        for h in hooks:
            h.remove()
        (y * g).sum().backward()
        if acts:
            assert sum(int((a == 6).sum()) for a in acts) > 0, "no ReLU6 clips in %s (%s)" % (case, mode)
        res = {"output": enc(y), "grad_input": enc(xi.grad),
               "grad_params": {k: enc(p.grad) for k, p in model.named_parameters()}}
        if mode == "train":
            res["buffers_after"] = {k: enc(b) for k, b in model.named_buffers()}
        fixture[mode] = res
    write(case, fixture)


def record_relu6(model):
    """Hooks that collect the outputs of every ReLU6 of model."""
    outs = []
    hooks = [m.register_forward_hook(lambda m, i, o: outs.append(o.detach()))
             for m in model.modules() if isinstance(m, nn.ReLU6)]
    return outs, hooks


def resnet_case(case, block, layers, widths, stem, in_channels, classes, input_shape):
    cfg = {"block": block, "layers": layers, "widths": widths, "stem": stem,
           "in_channels": in_channels, "classes": classes}
    cls = BasicBlock if block == "basic" else Bottleneck
    model_case(case, cfg, lambda: RefResNet(cls, layers, widths, in_channels, classes, stem), input_shape)


def mobilenet_case(case, widths, strides, in_channels, classes, input_shape):
    cfg = {"widths": widths, "strides": strides, "in_channels": in_channels, "classes": classes}
    model_case(case, cfg, lambda: ref_mobilenet(in_channels, classes, widths, strides), input_shape, bias_std=4.0)


def count(m):
    return sum(p.numel() for p in m.parameters())


def param_counts():
    # RefResNet must be torchvision's ResNet: same names, shapes and count.
    for fn, block, layers in ((torchvision.models.resnet18, BasicBlock, [2, 2, 2, 2]),
                              (torchvision.models.resnet34, BasicBlock, [3, 4, 6, 3]),
                              (torchvision.models.resnet50, Bottleneck, [3, 4, 6, 3])):
        tv = {k: tuple(v.shape) for k, v in fn().state_dict().items()}
        ref = {k: tuple(v.shape) for k, v in
               RefResNet(block, layers, [64, 128, 256, 512], 3, 1000, "imagenet").state_dict().items()}
        assert tv == ref, fn.__name__
    counts = {
        "resnet18": count(torchvision.models.resnet18()),
        "resnet34": count(torchvision.models.resnet34()),
        "resnet50": count(torchvision.models.resnet50()),
        "resnet20_cifar": count(RefResNet(BasicBlock, [3, 3, 3], [16, 32, 64], 3, 10, "cifar")),
        "resnet56_cifar": count(RefResNet(BasicBlock, [9, 9, 9], [16, 32, 64], 3, 10, "cifar")),
        "mobilenet_small_fmnist": count(ref_mobilenet(1, 10, [32, 64, 128, 128, 256], [2, 1, 2, 1, 1])),
    }
    write("param_counts", counts)
    # The names and shapes of resnet18's state dict, for the Go model to match.
    write("resnet18_state_shapes",
          {k: list(v.shape) for k, v in torchvision.models.resnet18().state_dict().items()})


def main():
    resnet_case("resnet_basic_cifar", "basic", [1, 2], [4, 8], "cifar", 3, 5, (2, 3, 12, 12))
    resnet_case("resnet_basic_imagenet", "basic", [1, 1], [4, 8], "imagenet", 1, 3, (2, 1, 24, 24))
    resnet_case("resnet_bottleneck", "bottleneck", [1, 1], [2, 4], "cifar", 3, 4, (2, 3, 8, 8))
    mobilenet_case("mobilenet_tiny", [4, 8, 8, 12], [1, 2, 1, 2], 2, 3, (2, 2, 12, 12))
    param_counts()


if __name__ == "__main__":
    main()
