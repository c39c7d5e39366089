#!/usr/bin/env python3
"""PyTorch side of the GPU benchmark (bench/gpu).

Measures the workloads that hora-gpu-bench (bench/gpu/main.go) measures for
Hora, under the same names, and prints one JSON object per line:

    {"framework": "pytorch", "workload": "sgemm 8192 tf32", "unit": "TFLOP/s", "value": 612.3}

Usage:
    torch_gpu_bench.py [--device cuda:0] [--min-time 2] [--small] [--no-tf32] [GROUP ...]
    torch_gpu_bench.py --write-onnx FILE [--image-size 64] [--classes 10]

Groups (the same as hora-gpu-bench's; default gemm mlp cnn resnet18):
  gemm      torch.mm of 8192 x 8192 float32 matrices with TF32 off ("fp32")
            and on ("tf32"); bf16: inputs converted to bfloat16 beforehand
            (bf16 out), under torch.autocast on float32 tensors (the
            conversion timed, bf16 out), and with out_dtype=float32 where
            this PyTorch has it. The bf16 rows compare with Hora's one bf16
            workload (float32 tensors, bf16 autocast, float32 out).
  mlp, cnn  one training step of the MLP 784-512-256-10 (SGD, momentum 0.9,
            lr 0.05) and of Hora's small CNN (Adam, lr 1e-3) on a fixed
            random batch of 128 and of 1024, copied from host memory every
            step ("host data") and already on the GPU ("data on GPU").
  resnet18  the same for ResNet-18 (torchvision's BasicBlock layout, written
            out here; 3x64x64 inputs, 10 classes, SGD momentum 0.9, lr 0.01)
            at batch 128.

A training step is the one of Hora's trainer (cmd/train, and
bench/internal/benchjob's Job.Step): forward, cross-entropy, loss.item(), backward, optimizer
step, zero_grad, and the count of correct predictions read back (.item()).
Training uses float32 with TF32 matrix products and convolutions (as Hora's
default); --no-tf32 turns TF32 off on both (and hora-gpu-bench -tf32=false).

--write-onnx FILE exports the ResNet-18 (random weights; BatchNormalization
kept, not folded into the convolutions; opset 17; dynamic batch) for
hora-gpu-bench -onnx FILE, and exits.

--device cpu and --small (GEMM 64, batch 4, ResNet-18 batch 2) smoke-test
the code paths without a GPU.
"""
import argparse
import inspect
import json
import sys
import time
import warnings

import torch
import torch.nn as nn

GROUPS = ["gemm", "mlp", "cnn", "resnet18"]
FULL = {"gemm": 8192, "batches": [128, 1024], "resnet_batch": 128, "warmup": 3}
SMALL = {"gemm": 64, "batches": [4], "resnet_batch": 2, "warmup": 1}
IMAGE_SIZE = 64
CLASSES = 10
HORA_BF16 = "bf16 gemm {n} (Hora: fp32 tensors, bf16 autocast, fp32 out)"


def emit(workload, unit, value, **extra):
    print(json.dumps({"framework": "pytorch", "workload": workload, "unit": unit, "value": value, **extra}), flush=True)


def info(name, value):
    print(json.dumps({"framework": "pytorch", "info": name, "value": value}), flush=True)


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def measure(f, dev, warmup, min_time):
    """Calls f warmup times, synchronizes, then calls f until min_time has
    passed and synchronizes again; returns the calls per second of the
    timed part, the queued GPU work included."""
    for _ in range(warmup):
        f()
    sync(dev)
    n = 0
    start = time.perf_counter()
    while True:
        f()
        n += 1
        if time.perf_counter() - start >= min_time:
            sync(dev)
            return n / (time.perf_counter() - start)


def has_attr(obj, name):
    """hasattr that also takes torch.backends.cuda.matmul's AssertionError for a missing name."""
    try:
        getattr(obj, name)
        return True
    except (AttributeError, AssertionError):
        return False


def set_tf32(on):
    """Lets float32 matrix products and cuDNN convolutions use TF32 (or not)."""
    matmul, conv = torch.backends.cuda.matmul, getattr(torch.backends.cudnn, "conv", None)
    if has_attr(matmul, "fp32_precision") and has_attr(conv, "fp32_precision"):
        # PyTorch 2.9+: the allow_tf32 flags are deprecated.
        matmul.fp32_precision = "tf32" if on else "ieee"
        conv.fp32_precision = "tf32" if on else "ieee"
    else:
        matmul.allow_tf32 = on
        torch.backends.cudnn.allow_tf32 = on


# Models.

def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(),
                         nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))


def cnn():
    """models.NewCNN."""
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))


class BasicBlock(nn.Module):
    """torchvision.models.resnet.BasicBlock."""

    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class ResNet18(nn.Module):
    """torchvision.models.resnet18(num_classes=classes), same layers, names and initialization."""

    def __init__(self, classes=CLASSES):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        planes = 64
        for i, width in enumerate([64, 128, 256, 512]):
            stride = 1 if i == 0 else 2
            setattr(self, f"layer{i + 1}", nn.Sequential(BasicBlock(planes, width, stride), BasicBlock(width, width)))
            planes = width
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def write_onnx(path, image_size, classes):
    """Exports ResNet18 with random weights for hora-gpu-bench -onnx.

    The model is exported as it is trained (training mode, TrainingMode.
    PRESERVE, no constant folding), for two reasons. In evaluation mode
    the exporter folds each BatchNormalization into its convolution, and
    it merges initializers of equal value: the freshly initialized
    BatchNorm weights (all ones) and biases (all zeros) of every layer
    would become one shared parameter, the running variances aliases of
    it. In training mode BatchNormalization keeps its own parameters and
    running statistics (training_mode=1), and Hora's onnx.Model follows
    its own train/eval mode for such nodes (layers.Train: batch
    statistics)."""
    torch.manual_seed(1)
    model = ResNet18(classes).train()
    x = torch.randn(2, 3, image_size, image_size)
    kwargs = dict(opset_version=17, input_names=["input"], output_names=["logits"],
                  dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                  training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    params = inspect.signature(torch.onnx.export).parameters
    if "dynamo" in params:
        # PyTorch 2.9+ defaults to the dynamo exporter (which needs
        # onnxscript and ignores dynamic_axes); use the TorchScript one.
        kwargs["dynamo"] = False
    missing = [k for k in kwargs if k not in params]
    if missing and not any(p.kind == p.VAR_KEYWORD for p in params.values()):
        sys.exit(f"torch_gpu_bench.py: torch.onnx.export of PyTorch {torch.__version__} has no {missing}")
    with warnings.catch_warnings():
        # Training-mode export warns about every num_batches_tracked.
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), path, **kwargs)
    try:
        import onnx
    except ImportError:
        return  # hora-gpu-bench checks the file too
    g = onnx.load(path, load_external_data=False).graph
    bn = sum(n.op_type == "BatchNormalization" for n in g.node)
    inits = {i.name for i in g.initializer}
    if bn != 20 or any(n.input[k] not in inits for n in g.node if n.op_type == "BatchNormalization" for k in (1, 2, 3, 4)):
        sys.exit(f"torch_gpu_bench.py: {path}: expected 20 BatchNormalization nodes with their own parameters "
                 f"and running statistics, found {bn}")


# Workloads.

def gemm(n, dev, warmup, min_time):
    g = torch.Generator().manual_seed(n)
    a = (torch.rand(n, n, generator=g) * 2 - 1).to(dev)
    b = (torch.rand(n, n, generator=g) * 2 - 1).to(dev)
    flops = 2 * n ** 3

    def tflops(f):
        return measure(f, dev, warmup, min_time) * flops / 1e12

    for tf32 in (False, True):
        if tf32 and dev.type != "cuda":
            continue
        set_tf32(tf32)
        emit(f"sgemm {n} {'tf32' if tf32 else 'fp32'}", "TFLOP/s", tflops(lambda: torch.mm(a, b)))
    set_tf32(False)
    if dev.type != "cuda":
        return
    hora = HORA_BF16.format(n=n)
    ab, bb = a.bfloat16(), b.bfloat16()
    emit(f"bf16 gemm {n} (PyTorch: bf16 tensors, bf16 out)", "TFLOP/s",
         tflops(lambda: torch.mm(ab, bb)), hora_workload=hora)

    def autocast():
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            return torch.mm(a, b)
    emit(f"bf16 gemm {n} (PyTorch: torch.autocast on fp32 tensors, bf16 out)", "TFLOP/s",
         tflops(autocast), hora_workload=hora)
    try:
        torch.mm(ab, bb, out_dtype=torch.float32)
    except (TypeError, RuntimeError):
        return  # no out_dtype in this PyTorch
    emit(f"bf16 gemm {n} (PyTorch: bf16 tensors, out_dtype=fp32)", "TFLOP/s",
         tflops(lambda: torch.mm(ab, bb, out_dtype=torch.float32)), hora_workload=hora)


def setup(name, dev):
    """The model and optimizer of the workload, on dev, and its sample shape."""
    torch.manual_seed(1)
    if name == "mlp":
        model = mlp().to(dev)
        return model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9), (1, 28, 28)
    if name == "cnn":
        model = cnn().to(dev)
        return model, torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8), (1, 28, 28)
    model = ResNet18(CLASSES).to(dev)
    return model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9), (3, IMAGE_SIZE, IMAGE_SIZE)


def step(model, opt, loss_fn, x, y, dev):
    """One training step as Hora's trainer takes it (see the module doc);
    x and y are moved to dev first (a no-op when they are there)."""
    x, y = x.to(dev), y.to(dev)
    logits = model(x)
    loss = loss_fn(logits, y)
    value = loss.item()
    loss.backward()
    opt.step()
    opt.zero_grad()
    right = (logits.argmax(1) == y).sum().item()
    return value, right


def train(name, batch, dev, warmup, min_time, tf32):
    model, opt, sample = setup(name, dev)
    model.train()
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(batch, *sample, generator=g)
    y = torch.randint(0, CLASSES, (batch,), generator=g)
    set_tf32(tf32)
    prec = "tf32" if tf32 and dev.type == "cuda" else "fp32"
    label = f"{name} train step batch {batch} {prec}"
    if name == "resnet18":
        label = f"resnet18 {'x'.join(map(str, sample))} train step batch {batch} {prec}"
    per_sec = measure(lambda: step(model, opt, loss_fn, x, y, dev), dev, warmup, min_time)
    emit(label + " (host data)", "samples/s", per_sec * batch)
    xd, yd = x.to(dev), y.to(dev)
    per_sec = measure(lambda: step(model, opt, loss_fn, xd, yd, dev), dev, warmup, min_time)
    emit(label + " (data on GPU)", "samples/s", per_sec * batch)
    set_tf32(False)


def describe(dev):
    if dev.type != "cuda":
        return str(dev)
    p = torch.cuda.get_device_properties(dev)
    return f"{dev}: {p.name}, sm_{p.major}{p.minor}"


def main(argv=None):
    global IMAGE_SIZE
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("groups", nargs="*", help=f"workload groups ({', '.join(GROUPS)}; default all)")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--min-time", type=float, default=2.0, help="seconds each measurement runs, after warm-up")
    ap.add_argument("--small", action="store_true", help="tiny sizes, for a smoke test")
    ap.add_argument("--no-tf32", dest="tf32", action="store_false", help="strict float32 training steps")
    ap.add_argument("--write-onnx", metavar="FILE", help="export the ResNet-18 to FILE and exit")
    ap.add_argument("--image-size", type=int, default=IMAGE_SIZE, help="ResNet-18 input height and width")
    ap.add_argument("--classes", type=int, default=CLASSES, help="ResNet-18 classes (--write-onnx)")
    args = ap.parse_args(argv)
    IMAGE_SIZE = args.image_size
    if args.write_onnx:
        write_onnx(args.write_onnx, args.image_size, args.classes)
        return
    unknown = [g for g in args.groups if g not in GROUPS]
    if unknown:
        ap.error(f"unknown group(s) {unknown} (known: {', '.join(GROUPS)})")
    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        sys.exit(f"torch_gpu_bench.py: --device {args.device}: PyTorch {torch.__version__} sees no CUDA GPU")
    size = SMALL if args.small else FULL
    info("torch", f"PyTorch {torch.__version__}, CUDA {torch.version.cuda}, "
                  f"cuDNN {torch.backends.cudnn.version() if dev.type == 'cuda' else None}")
    info("device", describe(dev))
    info("training precision", ("float32 tensors, TF32 matrix products and convolutions" if args.tf32 else "float32, TF32 off")
         if dev.type == "cuda" else f"float32 ({dev})")
    for g in args.groups or GROUPS:
        if g == "gemm":
            gemm(size["gemm"], dev, size["warmup"], args.min_time)
        elif g == "resnet18":
            train(g, size["resnet_batch"], dev, size["warmup"], args.min_time, args.tf32)
        else:
            for batch in size["batches"]:
                train(g, batch, dev, size["warmup"], args.min_time, args.tf32)


if __name__ == "__main__":
    main()
