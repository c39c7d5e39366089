#!/usr/bin/env bash
# bench.sh [RATE]: allreduce between hosts, on a cluster of this machine
# (scripts/cluster/cluster, as root) of 2 hosts whose links are shaped to
# RATE (tc's rate; default 1gbit, "none" leaves them unshaped). In one
# cluster session it runs bench/dist's allreduce measurement
#   - as 2 hosts × 2 ranks: the hierarchical allreduce (shared memory in
#     each host, MPI between them) and MPI alone, each through dist.Engine
#     (one tensor, and 16 tensors fused), against a plain MPI_Allreduce in
#     16 MiB pieces;
#   - as 2 hosts × 1 rank: MPI alone against the plain MPI_Allreduce;
# and prints one table (bench/dist_table.py) of bus bandwidths,
# algbw · 2(n−1)/n for n ranks, and their ratios. About 2 minutes at
# 1gbit.
#
# Environment: SIZES (MiB, default 4,16,64), ITERS (timed repetitions per
# size, the median is reported; default 5), BIN (default bin), BENCH_JSON=F
# keeps the JSON lines in F, HORA_CLUSTER names the cluster (default hora).
# The cluster's hosts share this machine's cores, so other clusters' runs
# would skew the numbers: it waits up to 10 minutes for them to end.
set -euo pipefail
cd "$(dirname "$0")/../.."
rate=${1:-1gbit}
C=$PWD/scripts/cluster/cluster
BIN=${BIN:-bin}
SIZES=${SIZES:-4,16,64}
ITERS=${ITERS:-5}
export HORA_CLUSTER=${HORA_CLUSTER:-hora}

go build -tags mpi -o "$BIN/hora-dist-bench" ./bench/dist
for i in $(seq 1 20); do
	busy=$(ip netns list | awk '$1 ~ /-switch$/ {print $1}')
	[ -z "$busy" ] && break
	[ "$i" = 20 ] && { echo "bench.sh: clusters still up after 10 minutes: $busy" >&2; exit 1; }
	echo "bench.sh: waiting for the cluster(s) $busy to end" >&2
	sleep 30
done
out=$(mktemp -d)
trap '"$C" down >/dev/null 2>&1 || true; rm -rf "$out"' EXIT
"$C" up 2 "$rate" >&2
"$C" install "$BIN/hora-dist-bench" /tmp/hora/hora-dist-bench # the hosts do not share /tmp
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores shared by the hosts; links: $rate" >&2
bench() { # bench LABEL HOSTS NP
	echo "$1: hora-dist-bench -mode allreduce -sizes $SIZES -iters $ITERS" >&2
	"$C" mpirun --host "$2" -np "$3" /tmp/hora/hora-dist-bench -mode allreduce \
		-sizes "$SIZES" -iters "$ITERS" -label "$1, $rate" >>"$out/results.jsonl"
}
bench "2 hosts × 2 ranks" node1:2,node2:2 4
bench "2 hosts × 1 rank" node1:1,node2:1 2
[ -n "${BENCH_JSON:-}" ] && cp "$out/results.jsonl" "$BENCH_JSON"
python3 bench/dist_table.py "$out/results.jsonl"
