#!/usr/bin/env bash
# make bench: Hora (bin/hora-bench, which runs bin/train for the epochs) and
# PyTorch (bench/pytorch_bench.py) on the same workloads, in one run on the
# same machine, printed as one table (bench/table.py).
#
# Environment:
#   REPEAT=N      run every measurement N times and report the median [1]
#   BENCH=quick   skip the two training epochs and the zoo (the slow part) [full]
#   BENCH_GROUPS  the groups to run, space separated, overriding BENCH
#                 (sgemm mlp-gemm train-step inference mlp-epoch cnn-epoch zoo)
#   BENCH_JSON=F  also keep the raw JSON lines in file F
#   PYTHON        the Python with torch [/usr/bin/python3, Debian's python3-torch]
#   BENCH_ISA=avx2  both frameworks without AVX-512, as on a CPU with AVX2
#                 only (run on a machine with AVX-512): Hora under
#                 GODEBUG=cpu.avx512f=off, PyTorch under ATEN_CPU_CAPABILITY=avx2
#                 and DNNL_MAX_CPU_ISA=AVX2, both with OPENBLAS_CORETYPE=Haswell
#                 (the OpenBLAS kernels such a CPU would load) [native]
#
# The two frameworks take turns per workload group, and in the zoo group per
# model (swapping who goes first every time), so that load drifting on a
# shared machine hits both: a slow spell of a minute used to fall on one
# side's whole zoo and swing its ratios by 20–30%.
# PyTorch runs with the environment measured fastest here (ARCHITECTURE.md,
# Benchmarks); Hora runs in the caller's environment, as a user's bin/train
# would.
set -euo pipefail
cd "$(dirname "$0")/.."

repeat=${REPEAT:-1}
python=${PYTHON:-/usr/bin/python3}
torch_env=(OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=SkylakeX MALLOC_MMAP_THRESHOLD_=30000000 MALLOC_TRIM_THRESHOLD_=1000000000)
hora_env=()
case ${BENCH_ISA:-native} in
native) ;;
avx2)
	hora_env+=(GODEBUG=cpu.avx512f=off OPENBLAS_CORETYPE=Haswell)
	torch_env+=(OPENBLAS_CORETYPE=Haswell ATEN_CPU_CAPABILITY=avx2 DNNL_MAX_CPU_ISA=AVX2)
	;;
*) echo "bench/run.sh: BENCH_ISA=$BENCH_ISA: expected native or avx2" >&2; exit 2 ;;
esac
export BENCH_ISA=${BENCH_ISA:-native}
case ${BENCH:-full} in
full) groups="sgemm mlp-gemm train-step inference mlp-epoch cnn-epoch zoo" ;;
quick) groups="sgemm mlp-gemm train-step inference" ;;
*) echo "bench/run.sh: BENCH=$BENCH: expected full or quick" >&2; exit 2 ;;
esac
groups=${BENCH_GROUPS:-$groups}
if ! [[ $repeat =~ ^[1-9][0-9]*$ ]]; then
	echo "bench/run.sh: REPEAT=$repeat: expected a positive integer" >&2
	exit 2
fi
for f in bin/hora-bench bin/train; do
	[ -x "$f" ] || { echo "bench/run.sh: $f is missing: run make bench (or make build and go build -o bin/hora-bench ./bench/hora)" >&2; exit 2; }
done

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
results=$out/results.jsonl
: >"$results"

hora() { env "${hora_env[@]}" bin/hora-bench "$1" >>"$results"; }
torch() {
	env "${torch_env[@]}" "$python" bench/pytorch_bench.py "$1" >>"$results"
	if [ "$1" = sgemm ]; then
		# torch.mm under OPENBLAS_NUM_THREADS=1 uses one core; also compare
		# with OpenBLAS on both cores.
		env "${torch_env[@]}" OPENBLAS_NUM_THREADS="$(nproc)" "$python" bench/pytorch_bench.py sgemm-openblas2 >>"$results"
	fi
}

# The zoo group one model at a time: the process without a model, then
# the configs of bench/zoo_twins.py (the list bench/hora checks its own
# against).
zoo_models() { (cd bench && "$python" -c 'import zoo_twins; print("none", *zoo_twins.ZOO)'); }
hora_zoo() { env "${hora_env[@]}" bin/hora-bench -zoo-model "$1" zoo >>"$results"; }
torch_zoo() { env "${torch_env[@]}" "$python" bench/pytorch_bench.py --zoo-model "$1" >>"$results"; }

# round_trip reports a cache line's round trip between two threads after
# each pair of measurements: on a VM whose vCPUs the host moves, about
# 80 ns while they share a cache and 380–400 ns while they do not here,
# two states in which the frameworks' ratios differ (BENCHMARKS.md).
round_trip() { echo "bench:   cache-line round trip between two threads: $(env "${hora_env[@]}" bin/hora-bench -round-trip)" >&2; }
host_state() { env "${hora_env[@]}" bin/hora-bench -host-state; }

# measure_pair FIRST SECOND ARG runs "FIRST ARG" then "SECOND ARG" (one
# framework each) and keeps their results, measuring the pair again, up
# to 3 tries, when the host state (hora-bench -host-state) timed before,
# between and after them differs: one framework timed while the vCPUs
# shared a cache and the other while they did not says nothing of either.
measure_pair() {
	local first=$1 second=$2 arg=$3 all=$results try s0 s1 s2
	results=$(mktemp)
	for try in 1 2 3; do
		: >"$results"
		s0=$(host_state)
		$first "$arg"
		s1=$(host_state)
		$second "$arg"
		s2=$(host_state)
		if [ "$s0" = "$s1" ] && [ "$s1" = "$s2" ]; then
			break
		fi
		if [ "$try" = 3 ]; then
			echo "bench:   the host state changed during each of 3 tries (last: $s0 → $s1 → $s2); keeping the last" >&2
			break
		fi
		echo "bench:   the host state changed during the pair ($s0 → $s1 → $s2); measuring it again" >&2
	done
	cat "$results" >>"$all"
	rm -f "$results"
	results=$all
}

start=$SECONDS
BENCH_LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
export BENCH_LOAD_START
turn=0
for g in $groups; do
	for i in $(seq "$repeat"); do
		if [ "$g" = zoo ]; then
			for m in $(zoo_models); do
				if ((turn++ % 2)); then first=torch_zoo second=hora_zoo; else first=hora_zoo second=torch_zoo; fi
				echo "bench: zoo $m, run $i/$repeat: ${first%_zoo}, then ${second%_zoo} ($((SECONDS - start)) s so far)" >&2
				measure_pair "$first" "$second" "$m"
				round_trip
			done
			continue
		fi
		if ((i % 2)); then first=hora second=torch; else first=torch second=hora; fi
		echo "bench: $g, run $i/$repeat: $first, then $second ($((SECONDS - start)) s so far)" >&2
		measure_pair "$first" "$second" "$g"
		round_trip
	done
done
echo "bench: done in $((SECONDS - start)) s" >&2
[ -z "${BENCH_JSON:-}" ] || cp "$results" "$BENCH_JSON"
"$python" bench/table.py -repeat "$repeat" "$results"
