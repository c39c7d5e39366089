#!/usr/bin/python3
"""PyTorch reference for `make bench`: trains the same models as Hora's
configs/fashion-mnist-{mlp,cnn}.yaml for one epoch on Fashion-MNIST and
prints one JSON line per model with samples/s and test accuracy.

Run with Debian's python3-torch; the Makefile sets the environment that
DESIGN.md found fastest on this machine (OPENBLAS_CORETYPE, 2 threads,
malloc thresholds) before Python starts.
"""
import gzip
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn

DATA = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
MEAN, STD = 0.2860, 0.3530


def read_idx(name):
    with gzip.open(os.path.join(DATA, name), "rb") as f:
        raw = f.read()
    magic = int.from_bytes(raw[:4], "big")
    ndim = magic & 0xFF
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(split):
    x = read_idx(f"{split}-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    y = read_idx(f"{split}-labels-idx1-ubyte.gz").astype(np.int64)
    x = (x - MEAN) / STD
    return torch.from_numpy(x).unsqueeze(1), torch.from_numpy(y)


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(),
                         nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))


def run(name, seed=1, batch=128):
    torch.manual_seed(seed)
    xtr, ytr = load("train")
    xte, yte = load("t10k")
    model = mlp() if name == "mlp" else cnn()
    if name == "mlp":
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    perm = torch.randperm(len(ytr))
    model.train()
    start = time.perf_counter()
    for i in range(0, len(ytr), batch):
        idx = perm[i:i + batch]
        opt.zero_grad()
        loss = loss_fn(model(xtr[idx]), ytr[idx])
        loss.backward()
        opt.step()
    seconds = time.perf_counter() - start
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(yte), 1000):
            correct += (model(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item()
    print(json.dumps({"model": name, "framework": "pytorch " + torch.__version__,
                      "threads": torch.get_num_threads(),
                      "samples_per_sec": len(ytr) / seconds, "seconds": seconds,
                      "test_accuracy": correct / len(yte)}), flush=True)


if __name__ == "__main__":
    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    for name in sys.argv[1:] or ["mlp", "cnn"]:
        run(name)
