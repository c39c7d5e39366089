#!/usr/bin/env bash
# bench/cluster.sh: weak scaling of training across simulated hosts
# (scripts/cluster/cluster): the MLP and the CNN of configs/, one rank of
# one compute thread per host, batch 128 per rank, over 1, 2 and 4 hosts
# whose links are shaped to RATE (default 1gbit). It prints each run's
# training throughput and the scaling efficiency, throughput(N) /
# (N × throughput(1)).
#
# All hosts share this machine's cores: with more ranks than cores (4
# hosts on 2 cores) the efficiency measures the CPU, not the network.
#
# Usage (as root): bench/cluster.sh [RATE] (HOSTS="1 2 4", MODELS="mlp cnn")
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${1:-1gbit}
HOSTS=${HOSTS:-1 2 4}
MODELS=${MODELS:-mlp cnn}
export HORA_CLUSTER=hbench
C=scripts/cluster/cluster
trap '$C down >/dev/null 2>&1 || true' EXIT

TRAIN=${TRAIN:-bin/train} # the trainer to measure
[ -x "$TRAIN" ] || make build >/dev/null
max=0
for n in $HOSTS; do [ "$n" -gt "$max" ] && max=$n; done
$C up "$max" "$RATE" >/dev/null
$C install "$TRAIN" /tmp/hora/train
for f in /usr/share/datasets/fashion-mnist/*-ubyte.gz; do
	$C install "$f" "/tmp/hora/data/$(basename "$f")"
done
for m in mlp cnn; do
	$C install "configs/fashion-mnist-$m.yaml" "/tmp/hora/$m.yaml"
done

# limit: training samples per rank, so that every run takes a few seconds.
declare -A limit=([mlp]=30720 [cnn]=3840)
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; links: $RATE"
printf '%-5s %6s %14s %11s\n' model hosts "samples/s" efficiency
for m in $MODELS; do
	base=
	for n in $HOSTS; do
		hf=$($C hostfile 1)
		head -n "$n" "$hf" >"$hf.$n"
		out=$($C mpirun --hostfile "$hf.$n" -np "$n" /tmp/hora/train -config "/tmp/hora/$m.yaml" \
			-set data.dir=/tmp/hora/data -set train.epochs=1 -set train.threads=1 -set train.batch_size=128 \
			-set "train.limit=$((${limit[$m]} * n))" -set output.progress=false -set output.plot=false \
			-set dist.lr_scaling=none -out "/tmp/hora/run-$m-$n" -q 2>&1) || { echo "$out" >&2; exit 1; }
		rate=$(echo "$out" | sed -n 's/.*  \([0-9]*\) samples\/s .*/\1/p' | tail -1)
		[ -n "$rate" ] || { echo "no throughput in: $out" >&2; exit 1; }
		[ -n "$base" ] || base=$rate
		awk -v m="$m" -v n="$n" -v r="$rate" -v b="$base" 'BEGIN { printf "%-5s %6d %14d %10.2f\n", m, n, r, r / (n * b) }'
	done
done
