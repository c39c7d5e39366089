#!/usr/bin/python3
"""Prints the table of `make bench` from the JSON lines of bin/hora-bench
and bench/pytorch_bench.py (standard library only).

Usage: table.py [-repeat N] RESULTS.jsonl ...

Each measurement line is {"framework", "workload", "unit", "value"}; a
workload measured several times (REPEAT=N) is reported as the median.
Lines with an "info" key describe the run (GEMM backend, versions). A
PyTorch line with "hora_workload" is compared with that Hora workload.
"""
import argparse
import datetime
import json
import os
import statistics
import sys

# Targets of the speed issue ("Speed on every CPU and on real models"):
# ("ratio", x) needs Hora/PyTorch >= x; ("min", x) needs Hora's value >= x;
# ("max", x) needs Hora's value <= x; ("equal", None) needs Hora's value =
# PyTorch's (a twin's parameter count).
TARGETS = {
    # The best BLAS on the machine (OpenBLAS with its AVX-512 kernels) on
    # every core.
    "sgemm 1024 (PyTorch: OPENBLAS_NUM_THREADS=2)": ("ratio", 1.0),
    "sgemm 2048 (PyTorch: OPENBLAS_NUM_THREADS=2)": ("ratio", 1.0),
    "mlp train epoch": ("ratio", 1.5),
    "cnn train epoch": ("ratio", 1.3),
    "cnn train step": ("ratio", 1.3),
    "mlp test accuracy (1 epoch)": ("min", 0.84),
    "cnn test accuracy (1 epoch)": ("min", 0.865),
    "mlp train step allocs/op": ("max", 50),
    "cnn train step allocs/op": ("max", 50),
}


def target(workload):
    """The target of a workload, or None. The zoo group's: every zoo
    model's training step at least as fast as its PyTorch twin's
    (bench/zoo_twins.py), with as many parameters."""
    if workload in TARGETS:
        return TARGETS[workload]
    if workload.startswith("zoo ") and workload.endswith(" train step"):
        return ("ratio", 1.0)
    if workload.startswith("zoo ") and workload.endswith(" params"):
        return ("equal", None)
    return None


def fmt(value, unit):
    if value is None:
        return "–"
    if unit == "accuracy":
        return f"{value:.4f}"
    if unit == "GFLOP/s":
        return f"{value:,.1f}"
    if unit == "B/op":
        return f"{value / 1e6:,.2f} MB"
    return f"{value:,.0f}"


def unit_text(unit):
    """The unit column. Peak memory is the one unit where lower is better,
    so its column says so."""
    return "MiB (lower is better)" if unit == "MiB" else unit


def target_text(kind, x):
    if kind == "equal":
        return "= PyTorch"
    return {"ratio": f"≥ {x:g}×", "min": f"Hora ≥ {x:g}", "max": f"Hora ≤ {x:g}"}[kind]


def met(kind, x, hora, ratio, torch=None):
    if kind == "equal":
        return None if hora is None or torch is None else hora == torch
    if kind == "ratio":
        return None if ratio is None else ratio >= x
    if hora is None:
        return None
    return hora >= x if kind == "min" else hora <= x


def machine(cpu):
    """The machine line: cores, the CPU as hora-bench reports it (its model
    and generation, internal/hostcpu's Describe), the OS and the date."""
    osname = "?"
    try:
        with open("/etc/os-release") as f:
            osname = next((l.split("=", 1)[1].strip().strip('"') for l in f if l.startswith("PRETTY_NAME=")), "?")
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, {osname}, {datetime.date.today().isoformat()}"


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def load(paths):
    """Reads the JSON lines of the files: the values of each (framework,
    workload), each workload's unit, the PyTorch workloads compared with a
    Hora one (workload -> hora_workload), the workloads in order of first
    appearance, and the info lines ((framework, info) -> value)."""
    values = {}
    units, compare, order, infos = {}, {}, [], {}
    for path in paths:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    r = json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"{path}:{n}: {e}: {line!r}")
                if "info" in r:
                    infos[(r["framework"], r["info"])] = r["value"]
                    continue
                w = r["workload"]
                values.setdefault((r["framework"], w), []).append(r["value"])
                units[w] = r["unit"]
                if "hora_workload" in r:
                    compare[w] = r["hora_workload"]
                if w not in order:
                    order.append(w)
    return values, units, compare, order, infos


def row_order(order, compare):
    """Hora's workloads in the order measured, each followed by the
    PyTorch-only rows that compare with it."""
    rows = [w for w in order if w not in compare]
    for w in order:
        if w in compare:
            at = rows.index(compare[w]) + 1 if compare[w] in rows else len(rows)
            while at < len(rows) and rows[at] in compare:
                at += 1
            rows.insert(at, w)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-repeat", type=int, default=1)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()

    values, units, compare, order, infos = load(args.files)

    def median(fw, w):
        v = values.get((fw, w))
        return statistics.median(v) if v else None

    backend = infos.get(("hora", "gemm backend"), "not reported by device/cpu")
    print(f"machine: {machine(infos.get(('hora', 'cpu'), 'CPU not reported by hora-bench'))}")
    if os.environ.get("BENCH_ISA", "native") != "native":
        print(f"instruction set: {os.environ['BENCH_ISA']} for both frameworks (BENCH_ISA; AVX-512 hidden)")
    print(f"Hora: {infos.get(('hora', 'go'), 'Go ?')}, GEMM backend: {backend}")
    print(f"PyTorch: {infos.get(('pytorch', 'torch'), '?')}")
    print()
    print(f"| workload | unit | Hora | PyTorch | Hora/PyTorch | target |")
    print("|---|---|---|---|---|---|")
    rows = row_order(order, compare)
    failed = 0
    for w in rows:
        unit = units[w]
        hora = median("hora", compare.get(w, w))
        torch = median("pytorch", w)
        ratio = hora / torch if hora is not None and torch else None
        tgt = ""
        if target(w):
            kind, x = target(w)
            ok = met(kind, x, hora, ratio, torch)
            tgt = target_text(kind, x) + {True: " ✔", False: " ✘", None: ""}[ok]
            failed += ok is False
        print(f"| {w} | {unit_text(unit)} | {fmt(hora, unit)} | {fmt(torch, unit)} | "
              f"{'–' if ratio is None else f'{ratio:.2f}×'} | {tgt} |")
    print()
    runs = "one run" if args.repeat <= 1 else f"the median of {args.repeat} runs"
    print(f"Each value is {runs}. Hora/PyTorch > 1 means Hora is faster (for allocs/op and bytes/op, "
          f"only Hora is measured; for peak memory in MiB, the process's largest resident set, "
          f"Hora/PyTorch < 1 means Hora needs less). {failed} target(s) missed.")
    if any(w.startswith("zoo ") for w in rows):
        print("zoo: one training step of each zoo config at its batch size (the char-LM's samples are windows of "
              "model.context tokens) against the PyTorch twin of bench/zoo_twins.py; "
              "zoo X params are the models' parameter counts. zoo X peak memory (train step) is the peak resident "
              "memory (ru_maxrss) of a process that builds and trains that model alone (each model runs in a process "
              "of its own), zoo no model peak memory that of a process with the framework loaded and no model (the Go "
              "runtime; Python with torch); Hora/PyTorch < 1 means Hora needs less. zoo X Go heap live between steps "
              "(Hora only) is what the Go heap keeps after a collection between two steps (parameters, gradients, "
              "optimizer state, the step's arena).")
    print(f"Load average (1, 5, 15 min) at the start: {os.environ.get('BENCH_LOAD_START', '?')}, at the end: {loadavg()} "
          f"({os.cpu_count()} cores; PyTorch's 2 threads slow down sharply when other processes compete for the cores).")


if __name__ == "__main__":
    main()
