#!/usr/bin/python3
"""Reference for fine-tuning an imported ONNX model: 5 SGD steps in PyTorch.

Usage (Debian's python3-torch and python3-onnx):

    /usr/bin/python3 scripts/onnx_finetune.py OUT_DIR

For each opset in (13, 17) it writes OUT_DIR/op<opset>/:

    model.onnx        a small CNN with BatchNorm and a residual block, exported
                      in training mode (BatchNormalization nodes are kept, not
                      folded into the convolutions; initializers keep their
                      PyTorch names)
    input.pb          a fixed batch of images, float32 [8, 3, 16, 16]
    labels.pb         its class labels, int64 [8]
    losses.pb         float32 [5]: the cross-entropy loss of each of the 5
                      steps of SGD (lr 0.01, momentum 0.9) in train mode,
                      computed before that step's update
    eval_output.pb    float32 [8, 10]: the logits of the batch in eval mode
                      after the 5 steps, with the running statistics that the
                      ONNX BatchNormalization spec gives after the 5 training
                      forwards (momentum 0.9 on the old value; the running
                      variance averages the population variance of each batch)
    eval_output_torch.pb  the same with PyTorch's running statistics, whose
                      variance update uses the unbiased (N-1) batch variance

onnx/finetune_test.go imports model.onnx into Hora, trains the same 5 steps and
compares. Weights are seeded: running the script twice writes identical files.
"""

import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper

torch.set_num_threads(2)

STEPS = 5
LR = 0.01
MOMENTUM = 0.9


class Block(nn.Module):
    """A ResNet basic block: conv-bn-relu-conv-bn plus the input, then relu."""

    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + x)


class Net(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.block = Block(8)
        self.pool = nn.MaxPool2d(2)
        self.down = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.head = nn.Linear(16, classes)

    def forward(self, x):
        x = self.pool(self.block(self.stem(x)))
        x = self.down(x)
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def write_pb(arr, path):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(arr)).SerializeToString())


def case(out, opset):
    torch.manual_seed(1234 + opset)
    model = Net()
    x = torch.randn(8, 3, 16, 16)
    y = torch.randint(0, 10, (8,))
    d = os.path.join(out, "op%d" % opset)
    os.makedirs(d, exist_ok=True)

    # Exporting in training mode traces forward passes, which update the
    # running statistics; the file gets the values after them. PyTorch's
    # run below starts from that state: check that it is the file's.
    path = os.path.join(d, "model.onnx")
    torch.onnx.export(
        model, x, path, opset_version=opset, input_names=["input"], output_names=["output"],
        dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
        training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    proto = onnx.load(path)
    onnx.checker.check_model(proto)
    state = model.state_dict()
    for init in proto.graph.initializer:
        if not np.array_equal(numpy_helper.to_array(init), state[init.name].numpy()):
            sys.exit("onnx_finetune.py: initializer %s differs from the model's state after export" % init.name)

    # The ONNX spec updates the running variance with the population
    # variance; PyTorch with the unbiased one. Track the ONNX statistics on
    # the side.
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    spec = {bn: (bn.running_mean.clone(), bn.running_var.clone()) for bn in bns}

    def track(bn, inputs):
        x = inputs[0].detach()
        mean, var = x.mean(dim=(0, 2, 3)), x.var(dim=(0, 2, 3), unbiased=False)
        rm, rv = spec[bn]
        spec[bn] = (rm * (1 - bn.momentum) + mean * bn.momentum, rv * (1 - bn.momentum) + var * bn.momentum)

    hooks = [bn.register_forward_pre_hook(track) for bn in bns]
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    for h in hooks:
        h.remove()
    model.eval()
    with torch.no_grad():
        torch_logits = model(x)
        for bn in bns:
            bn.running_mean.copy_(spec[bn][0])
            bn.running_var.copy_(spec[bn][1])
        logits = model(x)

    write_pb(x.numpy(), os.path.join(d, "input.pb"))
    write_pb(y.numpy(), os.path.join(d, "labels.pb"))
    write_pb(np.array(losses, dtype=np.float32), os.path.join(d, "losses.pb"))
    write_pb(logits.numpy(), os.path.join(d, "eval_output.pb"))
    write_pb(torch_logits.numpy(), os.path.join(d, "eval_output_torch.pb"))
    print("opset %d: losses %s" % (opset, " ".join("%.6f" % l for l in losses)), file=sys.stderr)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: onnx_finetune.py OUT_DIR")
    for opset in (13, 17):
        case(sys.argv[1], opset)


if __name__ == "__main__":
    main()
