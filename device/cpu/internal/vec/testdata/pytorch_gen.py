"""Writes pytorch.json, the PyTorch 1.13 reference outputs of vec's golden
test (golden_test.go). Run with Debian's /usr/bin/python3 (python3-torch):

    /usr/bin/python3 pytorch_gen.py

Inputs are not stored: both sides compute them with gen(k) below (integer
arithmetic, exact in float32). Outputs are float32 bit patterns in hex.
"""
import json

import numpy as np
import torch

N, STEPS = 203, 3
SCALES = np.array([1, 0.1, 0.01, 1e-3, 1e-4], dtype=np.float32)


def gen(k):
    """Values in [-1, 1), multiples of 2^-23, from integers k."""
    k = np.asarray(k, dtype=np.int64)
    u = ((k * 2654435761 + 12345) & 0xFFFFFFFF).astype(np.uint32)
    return (u.view(np.int32) >> 8).astype(np.float32) / np.float32(2 ** 23)


def hexs(t):
    return t.detach().numpy().astype(np.float32).view(np.uint32).tobytes().hex()


def params(c):
    return torch.tensor(gen(np.arange(N) + 1000003 * c))


def grad(c, s):
    i = np.arange(N)
    return torch.tensor(gen(i + 7919 * (s + 1) + 104729 * (c + 1)) * SCALES[i % 5])


OPTIM = [
    dict(kind="sgd", lr=0.1, momentum=0, dampening=0, weight_decay=0, nesterov=False),
    dict(kind="sgd", lr=0.1, momentum=0, dampening=0, weight_decay=0.01, nesterov=False),
    dict(kind="sgd", lr=0.1, momentum=0.9, dampening=0, weight_decay=0, nesterov=False),
    dict(kind="sgd", lr=0.05, momentum=0.9, dampening=0.5, weight_decay=1e-4, nesterov=False),
    dict(kind="sgd", lr=0.01, momentum=0.99, dampening=0, weight_decay=5e-4, nesterov=True),
    dict(kind="adam", lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0),
    dict(kind="adam", lr=0.001, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01),
    dict(kind="adam", lr=0.003, betas=(0.8, 0.99), eps=1e-6, weight_decay=0),
    dict(kind="adamw", lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01),
    dict(kind="adamw", lr=0.001, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1),
]


def run_optim(c, cfg):
    p = torch.nn.Parameter(params(c))
    kw = {k: v for k, v in cfg.items() if k != "kind"}
    opt = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[cfg["kind"]]([p], **kw)
    after = []
    for s in range(STEPS):
        p.grad = grad(c, s)
        opt.step()
        after.append(hexs(p))
    return dict(cfg, after=after)


SOFTMAX = [(5, 10, 3.0), (3, 37, 10.0), (2, 1003, 5.0), (4, 1, 1.0)]


def run_softmax(c, rows, classes, spread):
    x = torch.tensor(gen(np.arange(rows * classes) + 31337 * (c + 1)) * np.float32(spread)).reshape(rows, classes)
    x.requires_grad_(True)
    labels = torch.tensor([(r * 7 + 3) % classes for r in range(rows)])
    scale = np.float32(1) / np.float32(rows)
    loss = torch.nn.functional.cross_entropy(x, labels, reduction="sum")
    (loss * torch.tensor(scale)).backward()
    return dict(rows=rows, classes=classes, spread=spread, loss=float(loss), grad=hexs(x.grad.reshape(-1)))


def run_exp():
    special = [0.0, -0.0, 1.0, -1.0, 1e-30, 0.5, 10.0, -10.0, 88.0, 88.72, 88.72283, 88.7229, 89.0,
               -87.33, -87.34, -100.0, -103.0, -103.28, -103.9, -103.97, -103.98, -104.0, -110.0,
               float("inf"), float("-inf"), float("nan")]
    x = np.concatenate([np.array(special, dtype=np.float32), gen(np.arange(2000) + 4242) * np.float32(100)])
    return dict(x=hexs(torch.tensor(x)), y=hexs(torch.exp(torch.tensor(x))))


out = dict(
    torch=torch.__version__, n=N, steps=STEPS,
    optim=[run_optim(c, cfg) for c, cfg in enumerate(OPTIM)],
    softmax=[run_softmax(c, *a) for c, a in enumerate(SOFTMAX)],
    exp=run_exp(),
)
with open("pytorch.json", "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
print("torch %s: wrote pytorch.json" % torch.__version__)
