#!/usr/bin/env bash
# bench/elsewhere.sh: make bench and make bench-onnx on a machine without Go
# (a cloud VM, a GPU host's CPU), from binaries built here by
# `make bench-elsewhere` (bin/hora-bench, bin/train, bin/onnx-bench, static
# linux/amd64). The other machine needs this repository's tree, those three
# binaries and a Python with torch, torchvision, onnx and onnxruntime.
#
#   bench/elsewhere.sh OUT_DIR
#
# It runs, in this order, each under a time limit, writing into OUT_DIR:
#   machine.txt     the CPU (lscpu, caches, flags) and the Python packages
#   all.txt         bench/run.sh groups sgemm mlp-gemm train-step inference
#                   zoo on every core (GOMAXPROCS and PyTorch's threads: nproc)
#   onnx-all.txt    bench/onnx (resnet18, mobilenet_v2 at batch 1 and 32)
#                   against onnxruntime's Python package (ort_time.py), every core
#   two.txt         sgemm train-step zoo pinned to two physical cores, as the
#                   2-vCPU machines of BENCHMARKS.md
#   onnx-two.txt    bench/onnx on the same two cores
# (and each part's .err and .jsonl). Environment: PYTHON [python3];
# PARTS, a subset of "all onnx-all two onnx-two" [all of them].
set -u
cd "$(dirname "$0")/.."
out=${1:?usage: bench/elsewhere.sh OUT_DIR}
mkdir -p "$out"
py=${PYTHON:-python3}
parts=${PARTS:-all onnx-all two onnx-two}
for p in $parts; do
	case $p in
	all | onnx-all | two | onnx-two) ;;
	*) echo "bench/elsewhere.sh: PARTS: unknown part $p (known: all onnx-all two onnx-two)" >&2; exit 2 ;;
	esac
done
for f in bin/hora-bench bin/train bin/onnx-bench; do
	[ -x "$f" ] || { echo "bench/elsewhere.sh: $f is missing: run make bench-elsewhere on a machine with Go and copy bin/ here" >&2; exit 2; }
done
export PYTHONUNBUFFERED=1
log() { echo "== $(date +%T) $*" | tee -a "$out/progress.txt" >&2; }

{
	grep -m1 "model name" /proc/cpuinfo
	nproc
	lscpu
	for c in /sys/devices/system/cpu/cpu0/cache/index*; do
		echo "$c: L$(cat "$c/level") $(cat "$c/type") $(cat "$c/size"), shared by CPUs $(cat "$c/shared_cpu_list")"
	done
	"$py" -c "import torch, onnxruntime; print('torch', torch.__version__, '| onnxruntime', onnxruntime.__version__); print(torch.__config__.show())"
} >"$out/machine.txt" 2>&1
log "$(grep -m1 'model name' /proc/cpuinfo), $(nproc) CPUs"

n=$(nproc)
# Two CPUs on different physical cores (lscpu's core column).
two=$(lscpu -p=cpu,core | grep -v '^#' | sort -t, -k2,2n -u | head -2 | cut -d, -f1 | paste -sd,)

bench() { # NAME THREADS CPUS GROUPS LIMIT_S
	local name=$1 threads=$2 cpus=$3 groups=$4 limit=$5 pin=()
	[ -n "$cpus" ] && pin=(taskset -c "$cpus")
	log "$name: $groups on $threads threads${cpus:+ (CPUs $cpus)}"
	timeout "$limit" "${pin[@]}" env GOMAXPROCS="$threads" PYTHON="$py" BENCH_THREADS="$threads" \
		BENCH_GROUPS="$groups" BENCH_JSON="$out/$name.jsonl" bench/run.sh >"$out/$name.txt" 2>"$out/$name.err"
	log "$name: exit status $?"
}
onnx() { # NAME THREADS CPUS LIMIT_S
	local name=$1 threads=$2 cpus=$3 limit=$4 pin=()
	[ -n "$cpus" ] && pin=(taskset -c "$cpus")
	log "$name: bench/onnx on $threads threads${cpus:+ (CPUs $cpus)}"
	timeout "$limit" "${pin[@]}" env GOMAXPROCS="$threads" bin/onnx-bench -python "$py" -ort bench/onnx/ort_time.py \
		-models "$out/onnx-models" -threads "$threads" >"$out/$name.txt" 2>"$out/$name.err"
	log "$name: exit status $?"
}

for p in $parts; do
	case $p in
	all) bench all "$n" "" "sgemm mlp-gemm train-step inference zoo" 300 ;;
	onnx-all) onnx onnx-all "$n" "" 200 ;;
	two) bench two 2 "$two" "sgemm train-step zoo" 300 ;;
	onnx-two) onnx onnx-two 2 "$two" 200 ;;
	esac
	cat "$out/$p.txt"
done
rm -rf "$out/onnx-models"
