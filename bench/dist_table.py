"""Prints the table of make bench-dist from the JSON lines of bench/dist.sh:
medians over the repetitions, and the ratios the issue sets targets for."""
import json
import statistics
import sys


def main(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    print("| workload | Hora | baseline | ratio | target |")
    print("|---|---|---|---|---|")
    sizes = sorted({r["mb"] for r in rows if r["workload"] == "allreduce"})
    for mb in sizes:
        for shm, how in ((True, "shared memory"), (False, "MPI alone")):
            rs = [r for r in rows if r["workload"] == "allreduce" and r["mb"] == mb and r.get("shm", True) == shm]
            if not rs:
                continue
            raw = statistics.median(r["raw_busbw"] for r in rs)
            one = statistics.median(r["hora_busbw"] for r in rs)
            fused = statistics.median(r["fused_busbw"] for r in rs)
            print(f"| allreduce {mb} MB, 2 ranks, one tensor, {how} (bus GB/s) | {one:.2f} | {raw:.2f} (MPI_Allreduce, 16 MB pieces) | {one / raw:.2f}× | ≥ 0.9 |")
            print(f"| allreduce {mb} MB, 2 ranks, 16 tensors fused, {how} (bus GB/s) | {fused:.2f} | {raw:.2f} | {fused / raw:.2f}× | ≥ 0.9 |")
    mlp = [r for r in rows if r["workload"] == "mlp"]
    one = [r["samples_per_sec"] for r in mlp if r["ranks"] == 1]
    two = [r["samples_per_sec"] for r in mlp if r["ranks"] == 2 and not r["timeline"]]
    two_tl = [r["samples_per_sec"] for r in mlp if r["ranks"] == 2 and r["timeline"]]
    if one and two:
        a, b = statistics.median(one), statistics.median(two)
        print(f"| MLP weak scaling, batch 128 per rank (samples/s) | 2 ranks × 1 thread: {b:,.0f} | 1 rank × 1 thread: {a:,.0f} | {b / a:.2f}× | ≥ 1.8 |")
    if two and two_tl:
        b, c = statistics.median(two), statistics.median(two_tl)
        print(f"| timeline overhead, 2-rank MLP (samples/s) | on: {c:,.0f} | off: {b:,.0f} | {100 * (1 - c / b):+.1f}% | ≤ 3% |")


if __name__ == "__main__":
    main(sys.argv[1])
