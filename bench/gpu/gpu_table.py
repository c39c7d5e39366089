#!/usr/bin/env python3
"""Prints the table of the GPU benchmark (bench/gpu/run.sh) from the JSON
lines of hora-gpu-bench and torch_gpu_bench.py (standard library only).

Usage: gpu_table.py [-repeat N] RESULTS.jsonl ...

The lines are those of bench/table.py: {"framework", "workload", "unit",
"value"} per measurement, the median of a workload measured several times;
{"framework", "info", "value"} about the run; a PyTorch line with
"hora_workload" is compared with that Hora workload. bench/table.py holds
the CPU benchmark's targets; these are the GPU issue's.
"""
import argparse
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from table import load, row_order  # noqa: E402  (bench/table.py)

# The targets: Hora/PyTorch >= x for the workloads whose name
# matches (the full sizes only, so that a -small run meets none).
TARGETS = [
    (re.compile(r"^sgemm 8192 (fp32|tf32)$"), 0.95),
    (re.compile(r"^bf16 gemm 8192 \(PyTorch: bf16 tensors, bf16 out\)$"), 0.95),
    (re.compile(r"^(mlp|cnn) train step batch (128|1024) "), 1.0),
    (re.compile(r"^resnet18 3x64x64 train step batch 128 "), 0.8),
]


def target(workload):
    for pattern, x in TARGETS:
        if pattern.search(workload):
            return x
    return None


def fmt(value, unit):
    if value is None:
        return "–"
    if unit == "TFLOP/s":
        return f"{value:,.1f}" if value >= 1 else f"{value:.4f}"
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}"


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("-repeat", type=int, default=1)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args(argv)
    values, units, compare, order, infos = load(args.files)

    def median(fw, w):
        v = values.get((fw, w))
        return statistics.median(v) if v else None

    for fw, name in (("hora", "Hora"), ("pytorch", "PyTorch")):
        facts = [infos[(fw, k)] for k in ("device", "torch", "go") if (fw, k) in infos]
        prec = infos.get((fw, "training precision"))
        print(f"{name}: {', '.join(facts) or '?'}" + (f"; training: {prec}" if prec else ""))
    print()
    print("| workload | unit | Hora | PyTorch | Hora/PyTorch | target |")
    print("|---|---|---|---|---|---|")
    rows = row_order(order, compare)
    missed = 0
    for w in rows:
        unit = units[w]
        hora = median("hora", compare.get(w, w))
        torch = median("pytorch", w)
        ratio = hora / torch if hora is not None and torch else None
        tgt = ""
        x = target(w)
        if x is not None:
            ok = None if ratio is None else ratio >= x
            tgt = f"≥ {x:g}×" + {True: " ✔", False: " ✘", None: ""}[ok]
            missed += ok is False
        print(f"| {w} | {unit} | {fmt(hora, unit)} | {fmt(torch, unit)} | "
              f"{'–' if ratio is None else f'{ratio:.2f}×'} | {tgt} |")
    print()
    runs = "one run" if args.repeat <= 1 else f"the median of {args.repeat} runs"
    print(f"Each value is {runs}. Hora/PyTorch > 1 means Hora is faster. {missed} target(s) missed.")
    return missed


if __name__ == "__main__":
    main()
