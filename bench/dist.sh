#!/usr/bin/env bash
# make bench-dist: distributed training on this host, measured in one run
# and printed as one table (bench/dist_table.py):
#   - allreduce bus bandwidth on 2 ranks at 1, 16, 64 and 256 MB: Hora's
#     engine (one tensor, and the same bytes as 16 tensors fused), through
#     shared memory (the default on one host) and through MPI alone, in
#     the same run, against a plain MPI_Allreduce in 16 MB pieces
#     (scripts/cluster/bench.sh measures the same between hosts);
#   - weak scaling of the MLP (784-512-256-10, SGD, batch 128 per rank):
#     2 ranks of 1 thread against 1 rank of 1 thread;
#   - the overhead of the timeline on the 2-rank MLP.
#
# Environment: REPEAT=N runs everything N times, alternating, and reports
# medians [1]; BENCH_JSON=F keeps the raw JSON lines in F.
set -euo pipefail
cd "$(dirname "$0")/.."

repeat=${REPEAT:-1}
if ! [[ $repeat =~ ^[1-9][0-9]*$ ]]; then
	echo "bench/dist.sh: REPEAT=$repeat: expected a positive integer" >&2
	exit 2
fi
[ -x bin/hora-dist-bench ] || { echo "bench/dist.sh: bin/hora-dist-bench is missing: run make bench-dist" >&2; exit 2; }
mpirun=(mpirun)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
results=$out/results.jsonl
for ((i = 1; i <= repeat; i++)); do
	echo "run $i/$repeat: allreduce, 2 ranks, through shared memory and through MPI alone" >&2
	"${mpirun[@]}" -np 2 bin/hora-dist-bench -mode allreduce -iters 10 >>"$results"
	echo "run $i/$repeat: MLP, 1 rank and 2 ranks of 1 thread, timeline off and on" >&2
	"${mpirun[@]}" -np 1 -x GOMAXPROCS=1 bin/hora-dist-bench -mode mlp -steps 200 >>"$results"
	"${mpirun[@]}" -np 2 -x GOMAXPROCS=1 bin/hora-dist-bench -mode mlp -steps 200 >>"$results"
	"${mpirun[@]}" -np 2 -x GOMAXPROCS=1 bin/hora-dist-bench -mode mlp -steps 200 -timeline "$out/timeline.json" >>"$results"
done
[ -n "${BENCH_JSON:-}" ] && cp "$results" "$BENCH_JSON"
python3 bench/dist_table.py "$results"
