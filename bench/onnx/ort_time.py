#!/usr/bin/env python3
"""ort_time.py times inference of an ONNX model with onnxruntime's Python
package (CPU) and prints one JSON line, for bench/onnx on machines that
have onnxruntime for Python but no Node.js. It measures exactly as
ort_time.js does, and bench/onnx reads either:

    python3 bench/onnx/ort_time.py MODEL.onnx BATCH [MIN_MS] [THREADS]
    {"framework": "ort", "model": "resnet18.onnx", "batch": 1, "ms": 12.3, "runs": 40, ...}

The model's first input is fed seeded uniform float32 values in
[-1.7, 1.7), the range of ort_time.js's (which draws them by xorshift, too
slow a loop in Python), of shape [BATCH, ...] (the other
dimensions from the model, which must be static). After 3 warm-up runs it
runs until MIN_MS (default 2000) have passed and at least 5 runs are done,
and reports the median time of one run in ms. THREADS (default 2) is
intra_op_num_threads; one inter-op thread, sequential execution, all graph
optimizations.
"""
import json
import os
import sys
import time


def usage(msg):
    sys.stderr.write(f"ort_time.py: {msg}\nusage: python3 ort_time.py MODEL.onnx BATCH [MIN_MS] [THREADS]\n")
    sys.exit(2)


def positive_int(arg, what):
    try:
        v = int(arg)
    except ValueError:
        v = 0
    if v < 1:
        usage(f"{what} {arg}: expected a positive integer")
    return v


def input_values(n):
    """Seeded uniform values in [-1.7, 1.7), as ort_time.js's range."""
    import numpy as np
    return np.random.default_rng(12345).uniform(-1.7, 1.7, n).astype(np.float32)


def main(argv):
    if len(argv) < 2:
        usage("need MODEL.onnx and BATCH")
    model = argv[0]
    batch = positive_int(argv[1], "BATCH")
    min_ms = 2000.0
    if len(argv) > 2:
        try:
            min_ms = float(argv[2])
        except ValueError:
            min_ms = -1
        if not min_ms >= 0:
            usage(f"MIN_MS {argv[2]}: expected a number of milliseconds")
    threads = positive_int(argv[3], "THREADS") if len(argv) > 3 else 2

    try:
        import onnxruntime as ort
    except ImportError as e:
        sys.stderr.write(f"ort_time.py: onnxruntime for Python is missing: {e}\n")
        sys.exit(3)

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(model, sess_options=opts, providers=["CPUExecutionProvider"])
    inp = session.get_inputs()[0]
    dims = list(inp.shape)
    dims[0] = batch
    for i, d in enumerate(dims[1:], start=1):
        if not isinstance(d, int) or d < 1:
            usage(f"{model}: input {inp.name} dimension {i} is dynamic ({d})")
    n = 1
    for d in dims:
        n *= d
    feeds = {inp.name: input_values(n).reshape(dims)}

    for _ in range(3):
        session.run(None, feeds)
    times = []
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        session.run(None, feeds)
        t1 = time.perf_counter()
        times.append((t1 - t0) * 1e3)
        if len(times) >= 5 and (t1 - start) * 1e3 >= min_ms:
            break
    times.sort()
    k = len(times)
    median = times[k // 2] if k % 2 else (times[k // 2 - 1] + times[k // 2]) / 2
    print(json.dumps({
        "framework": "ort", "version": ort.__version__, "model": os.path.basename(model),
        "batch": batch, "threads": threads, "ms": median, "runs": k,
    }), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
