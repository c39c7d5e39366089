#!/usr/bin/python3
"""PyTorch reference for `make bench`.

Measures the workloads that bench/hora (bin/hora-bench) measures for Hora,
under the same names, and prints one JSON object per line:

    {"framework": "pytorch", "workload": "sgemm 1024", "unit": "GFLOP/s", "value": 201.3}

Usage: pytorch_bench.py [GROUP ...]  (default: all groups)
       pytorch_bench.py --zoo-model FILE  (the zoo group's measurement of one
                                          config, or of none: no model)

Groups (the same as hora-bench's):
  sgemm            torch.mm on N x N float32 matrices, N = 256, 512, 1024, 2048
  mlp-gemm         the matrix products of one training step of the MLP
                   784-512-256-10 at batch 128, in nn.Linear's layouts
  train-step       one training step of the MLP and of the CNN at batch 128
                   (samples/s; a fixed random batch, after warm-up)
  inference        the CNN's forward pass on a batch of 128, eval mode, no_grad
  mlp-epoch        one epoch of configs/fashion-mnist-mlp.yaml: samples/s of
  cnn-epoch        the first epoch with the data in memory, and test accuracy
  zoo              one training step of each zoo model (LeNet-5, ResNet-8,
                   ResNet-20, MobileNet, the Transformer classifier, the
                   character-level LM) at its config's batch size, samples/s,
                   its parameter count and the peak resident memory of a
                   process that trains it alone (each model runs in a Python
                   process of its own): the twins of bench/zoo_twins.py
  sgemm-openblas2  sgemm 1024 and 2048 again, meant to run with
                   OPENBLAS_NUM_THREADS=2 (bench/run.sh does), reported as
                   extra rows next to Hora's sgemm

Run it with Debian's python3-torch. bench/run.sh sets the environment that
ARCHITECTURE.md (Benchmarks) names as fastest here before Python starts:
OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=SkylakeX
MALLOC_MMAP_THRESHOLD_=30000000 MALLOC_TRIM_THRESHOLD_=1000000000, and
the script uses 2 threads (BENCH_THREADS overrides). Note that with
OPENBLAS_NUM_THREADS=1, torch.mm runs on one core.
"""
import gzip
import json
import os
import resource
import sys
import time

import numpy as np
import torch
import torch.nn as nn

DATA = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
MEAN, STD = 0.2860, 0.3530
BATCH = 128
MIN_TIME = float(os.environ.get("BENCH_MIN_TIME", "0.5"))  # seconds per GEMM / inference measurement
STEP_TIME = 1.0  # seconds per training-step measurement, as Go's testing.Benchmark
WARMUP_STEPS = 3  # as bench/hora's warmUpSteps
ZOO_TIME = float(os.environ.get("BENCH_ZOO_TIME", "3"))  # seconds per zoo step measurement, as hora-bench -zoo-time
GROUPS = ["sgemm", "mlp-gemm", "train-step", "inference", "mlp-epoch", "cnn-epoch", "zoo", "sgemm-openblas2"]


def emit(workload, unit, value, **extra):
    print(json.dumps({"framework": "pytorch", "workload": workload, "unit": unit, "value": value, **extra}), flush=True)


def info(name, value):
    print(json.dumps({"framework": "pytorch", "info": name, "value": value}), flush=True)


def measure(f, min_time=MIN_TIME):
    """Calls f once to warm up, then until min_time has passed; returns calls per second."""
    f()
    n = 0
    start = time.perf_counter()
    while True:
        f()
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_time:
            return n / elapsed


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


def setup(name):
    """The model and optimizer of configs/fashion-mnist-<name>.yaml."""
    model = mlp() if name == "mlp" else cnn()
    if name == "mlp":
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    return model, opt


def step(model, opt, loss_fn, x, y):
    """One training step, as the epoch loop below takes it."""
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss


def gemm(prefix, name, m, k, n, trans_a=False, trans_b=False, **extra):
    g = torch.Generator().manual_seed(m * k + n)
    a = torch.rand(*((k, m) if trans_a else (m, k)), generator=g) * 2 - 1
    b = torch.rand(*((n, k) if trans_b else (k, n)), generator=g) * 2 - 1
    at = a.t() if trans_a else a
    bt = b.t() if trans_b else b
    per_sec = measure(lambda: torch.mm(at, bt))
    emit(prefix + name, "GFLOP/s", per_sec * 2 * m * k * n / 1e9, **extra)


def mlp_gemms():
    """The products of one MLP training step, named and ordered as bench/hora's mlpGEMMs."""
    widths = [784, 512, 256, 10]
    out = []
    for i in range(len(widths) - 1):
        fin, fout = widths[i], widths[i + 1]
        out.append((f"{BATCH}x{fin}x{fout} (fwd)", BATCH, fin, fout, False, True))  # X·Wᵀ
    for i in range(len(widths) - 2, -1, -1):
        fin, fout = widths[i], widths[i + 1]
        if i > 0:  # the first layer's input needs no gradient
            out.append((f"{BATCH}x{fout}x{fin} (dX)", BATCH, fout, fin, False, False))  # dY·W
        out.append((f"{fout}x{BATCH}x{fin} (dW)", fout, BATCH, fin, True, False))  # dYᵀ·X
    return out


def random_batch(seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(BATCH, 1, 28, 28, generator=g), torch.randint(0, 10, (BATCH,), generator=g)


def train_steps():
    x, y = random_batch()
    loss_fn = nn.CrossEntropyLoss()
    for name in ("mlp", "cnn"):
        torch.manual_seed(1)
        model, opt = setup(name)
        model.train()
        for _ in range(WARMUP_STEPS):
            step(model, opt, loss_fn, x, y)
        per_sec = measure(lambda: step(model, opt, loss_fn, x, y), STEP_TIME)
        emit(f"{name} train step", "samples/s", per_sec * BATCH)


def inference():
    torch.manual_seed(1)
    model = cnn()
    model.eval()
    x, _ = random_batch()
    with torch.no_grad():
        per_sec = measure(lambda: model(x))
    emit(f"cnn inference batch {BATCH}", "samples/s", per_sec * BATCH)


def epoch(name, seed=1):
    """One epoch as configs/fashion-mnist-<name>.yaml, data in memory; then the test accuracy."""
    torch.manual_seed(seed)
    xtr, ytr = load("train")
    xte, yte = load("t10k")
    model, opt = setup(name)
    loss_fn = nn.CrossEntropyLoss()
    perm = torch.randperm(len(ytr))
    model.train()
    start = time.perf_counter()
    for i in range(0, len(ytr), BATCH):
        idx = perm[i:i + BATCH]
        step(model, opt, loss_fn, xtr[idx], ytr[idx])
    seconds = time.perf_counter() - start
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(yte), 1000):
            correct += (model(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item()
    emit(f"{name} train epoch", "samples/s", len(ytr) / seconds)
    # The process's peak resident memory (Linux counts ru_maxrss in KiB),
    # as the trainer's metrics.jsonl reports it for Hora.
    emit(f"{name} peak memory (1 epoch)", "MiB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    emit(f"{name} test accuracy (1 epoch)", "accuracy", correct / len(yte))


def zoo():
    """The zoo configs' training steps on their PyTorch twins, as bench/hora's zoo group: each in a
    Python process of its own (zoo_one), so that each reports its own peak resident memory, after
    one process without a model."""
    import subprocess
    import zoo_twins  # bench/, beside this file
    for file in [ZOO_NO_MODEL] + zoo_twins.ZOO:
        sys.stdout.flush()
        subprocess.run([sys.executable, os.path.abspath(__file__), "--zoo-model", file], check=True)


ZOO_NO_MODEL = "none"  # the --zoo-model of the process without a model, as hora-bench -zoo-model none


def peak_rss_mib():
    """The process's peak resident memory (Linux counts ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def zoo_one(file):
    """One zoo config's training step on its PyTorch twin (zoo), and the peak resident memory of
    this process, which trains that model alone; ZOO_NO_MODEL: the peak resident memory of the
    process with torch and the twins' module loaded, without a model."""
    import zoo_twins  # bench/, beside this file
    if file == ZOO_NO_MODEL:
        emit("zoo no model peak memory", "MiB", peak_rss_mib())
        return
    j = zoo_twins.Job(file)
    emit(f"zoo {j.name} params", "parameters", j.params())
    j.model.train()
    for _ in range(WARMUP_STEPS):
        j.step()
    per_sec = measure(j.step, ZOO_TIME)
    emit(f"zoo {j.name} train step", "samples/s", per_sec * j.batch)
    emit(f"zoo {j.name} peak memory (train step)", "MiB", peak_rss_mib())


def blas_library():
    """The file name of the BLAS library torch.mm runs in (Debian's torch links the generic libblas.so.3)."""
    torch.mm(torch.ones(2, 2), torch.ones(2, 2))
    try:
        with open("/proc/self/maps") as f:
            names = {os.path.basename(line.split()[-1]) for line in f if "blas" in line.lower()}
    except OSError:
        return "?"
    return ", ".join(sorted(names)) or "?"


def main(groups):
    zoo_model = None
    if groups[:1] == ["--zoo-model"] and len(groups) == 2:
        zoo_model, groups = groups[1], []
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        sys.exit(f"pytorch_bench.py: unknown group(s) {unknown} (known: {', '.join(GROUPS)})")
    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    blas = blas_library()
    if zoo_model is not None:
        zoo_one(zoo_model)
        return
    info("torch", f"PyTorch {torch.__version__} ({torch.get_num_threads()} threads, BLAS {blas}, "
                  f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')})")
    for g in groups:
        if g == "sgemm":
            for n in (256, 512, 1024, 2048):
                gemm("sgemm ", str(n), n, n, n)
        elif g == "sgemm-openblas2":
            threads = os.environ.get("OPENBLAS_NUM_THREADS", "unset")
            for n in (1024, 2048):
                gemm("sgemm ", f"{n} (PyTorch: OPENBLAS_NUM_THREADS={threads})", n, n, n,
                     hora_workload=f"sgemm {n}")
        elif g == "mlp-gemm":
            for name, m, k, n, ta, tb in mlp_gemms():
                gemm("mlp gemm ", name, m, k, n, ta, tb)
        elif g == "train-step":
            train_steps()
        elif g == "inference":
            inference()
        elif g in ("mlp-epoch", "cnn-epoch"):
            epoch(g.split("-")[0])
        elif g == "zoo":
            zoo()


if __name__ == "__main__":
    main(sys.argv[1:] or [g for g in GROUPS if g != "sgemm-openblas2"])
