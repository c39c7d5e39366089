"""Prints the table of make bench-dist (bench/dist.sh) and of
scripts/cluster/bench.sh from the JSON lines of hora-dist-bench: medians
over the repetitions, and the ratios the issue sets targets for.

Allreduce rows give the bus bandwidth, algbw · 2(n−1)/n for n ranks, of
Hora's engine (one tensor, and the same bytes as 16 tensors fused) on each
transport measured, against a plain MPI_Allreduce in 16 MB pieces of the
same run; where the run measured MPI alone and another transport (shared
memory, hierarchical), a row gives the gain of the fused path."""
import json
import statistics
import sys

# The transport's short name, from mpi.Describe's.
def how(transport):
    if transport.startswith("hierarchical"):
        return "hierarchical"
    if transport.startswith("shared memory"):
        return "shared memory"
    return "MPI alone"


def main(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    print("| workload | Hora | baseline | ratio | target |")
    print("|---|---|---|---|---|")
    ar = [r for r in rows if r["workload"] == "allreduce"]
    for r in ar:
        r["how"] = how(r.get("transport", "shared memory" if r.get("shm", True) else "MPI"))
        r.setdefault("label", f'{r["ranks"]} ranks')
    groups = []
    for r in ar:
        if (r["label"], r["mb"]) not in groups:
            groups.append((r["label"], r["mb"]))
    groups.sort(key=lambda g: (g[0], g[1]))
    for label, mb in groups:
        fused_by = {}
        for kind in ("MPI alone", "shared memory", "hierarchical"):
            rs = [r for r in ar if r["label"] == label and r["mb"] == mb and r["how"] == kind]
            if not rs:
                continue
            raw = statistics.median(r["raw_busbw"] for r in rs)
            one = statistics.median(r["hora_busbw"] for r in rs)
            fused = statistics.median(r["fused_busbw"] for r in rs)
            fused_by[kind] = fused
            print(f"| allreduce {mb} MB, {label}, one tensor, {kind} (bus GB/s) | {one:.2f} | {raw:.2f} (MPI_Allreduce, 16 MB pieces) | {one / raw:.2f}× | ≥ 0.9 |")
            print(f"| allreduce {mb} MB, {label}, 16 tensors fused, {kind} (bus GB/s) | {fused:.2f} | {raw:.2f} | {fused / raw:.2f}× | ≥ 0.9 |")
        for kind in ("shared memory", "hierarchical"):
            if kind in fused_by and "MPI alone" in fused_by:
                a, b = fused_by[kind], fused_by["MPI alone"]
                print(f"| allreduce {mb} MB, {label}, 16 tensors fused: {kind} vs MPI alone (bus GB/s) | {a:.2f} | {b:.2f} | {a / b:.2f}× | > 1 |")
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
