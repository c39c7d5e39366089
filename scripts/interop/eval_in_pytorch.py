#!/usr/bin/python3
"""Loads a model trained by Hora (DIR/model.safetensors) into the same
architecture built in PyTorch and evaluates it on the Fashion-MNIST test
set: the accuracy must equal the test_accuracy in DIR/metrics.jsonl.

This checks, outside Go, that the safetensors file follows the format,
that parameter names and layouts match PyTorch's (load_state_dict with
strict=True), and that Hora's forward pass computes what PyTorch's does.

    /usr/bin/python3 scripts/interop/eval_in_pytorch.py runs/fashion-mnist-mlp

The file is read with a small reader written from the format's
specification, since Debian 12 has no python3-safetensors.
"""
import json
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from pytorch_bench import cnn, load, mlp  # noqa: E402

DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64}


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    base = 8 + n
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        arr = np.frombuffer(raw[base + begin:base + end], dtype=DTYPES[info["dtype"]])
        out[name] = torch.from_numpy(arr.reshape(info["shape"]).copy())
    return out, meta


def main(run_dir):
    weights, meta = read_safetensors(os.path.join(run_dir, "model.safetensors"))
    name = meta["model"]
    if name == "mlp":
        model = mlp()
    elif name == "cnn":
        seq = cnn()
        # Hora's CNN is features (conv, relu, pool, conv, relu, pool) +
        # classifier (flatten, linear, relu, linear).
        model = torch.nn.Sequential()
        model.add_module("features", seq[:6])
        model.add_module("classifier", torch.nn.Sequential(*seq[6:]))
    else:
        sys.exit(f"no PyTorch twin for model {name!r}")
    model.load_state_dict(weights, strict=True)
    model.eval()
    x, y = load("t10k")
    with torch.no_grad():
        acc = (model(x).argmax(1) == y).float().mean().item()
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
        hora = [r for r in records if r.get("kind", "epoch") == "epoch"][-1]["test_accuracy"]
    print(json.dumps({"model": name, "epoch": meta.get("epoch"),
                      "pytorch_test_accuracy": acc, "hora_test_accuracy": hora}))
    if abs(acc - hora) > 2e-4:  # at most 2 of 10,000 predictions may flip on rounding
        sys.exit(f"accuracy differs: PyTorch {acc}, Hora {hora}")


if __name__ == "__main__":
    main(sys.argv[1])
