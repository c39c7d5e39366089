#!/usr/bin/python3
"""Export torchvision's resnet18 and mobilenet_v2 to ONNX, for Hora's transfer-learning tests.

Usage (Debian's python3-torch, python3-torchvision and python3-onnx):

    /usr/bin/python3 scripts/torchvision_export.py OUT_DIR

writes OUT_DIR/resnet18.onnx and OUT_DIR/mobilenet_v2.onnx: random weights
(torch.manual_seed(0) before building each model; BatchNorm statistics
randomized too), eval mode with the BatchNormalization nodes kept (not
folded into the convolutions, so that they can be fine-tuned), the default
1000 classes, an input "input" of shape [batch, 3, 64, 64] whose batch axis
is dynamic ("batch"), an output "output" of shape [batch, 1000], opset 17
(the highest Hora imports; torch 1.13 exports it). Files already present are
kept, so a cached OUT_DIR costs nothing.
"""

import os
import sys
import warnings

import torch
import torchvision.models as tvm

torch.set_num_threads(2)
# Constant folding with TrainingMode.PRESERVE warns that it may fold
# parameters; in eval mode it folds only the shape computations.
warnings.filterwarnings("ignore", message="It is recommended that constant folding be turned off")

OPSET = 17
MODELS = ("resnet18", "mobilenet_v2")


def randomize_bn(model):
    """Gives every BatchNorm random running statistics and affine parameters.

    torchvision initializes them to constants (weight 1, bias 0, mean 0,
    variance 1), which the exporter would deduplicate into shared
    initializers behind Identity nodes, and with which BatchNorm in eval
    mode is nearly the identity.
    """
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            n = m.num_features
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(n) * 0.1)
                m.running_var.copy_(torch.rand(n) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(n) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(n) * 0.1)


def export(name, path):
    torch.manual_seed(0)
    model = getattr(tvm, name)(weights=None)
    randomize_bn(model)
    model.eval()
    x = torch.randn(2, 3, 64, 64)
    tmp = path + ".tmp"
    with torch.no_grad():
        torch.onnx.export(
            model, x, tmp, opset_version=OPSET, input_names=["input"], output_names=["output"],
            dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, do_constant_folding=True,
            training=torch.onnx.TrainingMode.PRESERVE)
    os.replace(tmp, path)  # a reader never sees a half-written file


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: torchvision_export.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name in MODELS:
        path = os.path.join(out, name + ".onnx")
        if os.path.exists(path):
            print("%s: present, kept" % path, file=sys.stderr)
            continue
        export(name, path)
        print("%s: written" % path, file=sys.stderr)


if __name__ == "__main__":
    main()
