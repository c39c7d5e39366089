#!/usr/bin/env bash
# bench/gpu/run.sh: Hora (hora-gpu-bench) against PyTorch eager
# (torch_gpu_bench.py) on the same GPU workloads, in one run on the same
# GPU, printed as one table (gpu_table.py). It needs no Go: `make bench-gpu`
# builds the Hora binary (build/gpu/hora-gpu-bench), which can be copied
# with bench/gpu/ to a GPU machine that has PyTorch.
#
# Environment:
#   HORA_GPU_BENCH  the hora-gpu-bench binary [build/gpu/hora-gpu-bench]
#   PYTHON          a Python with PyTorch [python3]
#   DEVICE          the GPU [cuda:0]; "cpu" smoke-tests the scripts without one
#   BENCH_GROUPS    the groups, space separated [gemm mlp cnn resnet18]
#   REPEAT=N        run every group N times and report medians [1]
#   MIN_TIME        seconds each measurement runs [2]
#   ONNX            the ResNet-18 file [build/gpu/resnet18-<IMAGE_SIZE>.onnx,
#                   exported with PyTorch when missing]
#   IMAGE_SIZE      the ResNet-18 input's height and width [64]
#   TF32=0          train in strict float32 (both sides) instead of TF32
#   SMALL=1         tiny sizes, for a smoke test
#   BENCH_JSON=F    also keep the raw JSON lines in file F
#   HORA_CUDA_LIBS  a folder with libcuda/libcublas/libnvrtc, if Hora does
#                   not find them (see device/cuda)
#
# The two frameworks take turns per group and swap who goes first on every
# repetition, so that drifting clocks or load hit both. Exit status: 0, or
# 2 when something is missing (no GPU, no binary, no PyTorch).
set -euo pipefail
# Paths given in the environment are relative to the caller's folder; the
# defaults to the repository's root, where the script runs.
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
[ -z "${HORA_GPU_BENCH:-}" ] || HORA_GPU_BENCH=$(abs "$HORA_GPU_BENCH")
[ -z "${ONNX:-}" ] || ONNX=$(abs "$ONNX")
[ -z "${BENCH_JSON:-}" ] || BENCH_JSON=$(abs "$BENCH_JSON")
cd "$(dirname "$0")/../.."

hora_bin=${HORA_GPU_BENCH:-build/gpu/hora-gpu-bench}
python=${PYTHON:-python3}
dev=${DEVICE:-cuda:0}
groups=${BENCH_GROUPS:-gemm mlp cnn resnet18}
repeat=${REPEAT:-1}
min_time=${MIN_TIME:-2}
image=${IMAGE_SIZE:-64}
onnx=${ONNX:-build/gpu/resnet18-$image.onnx}

die() { echo "bench/gpu/run.sh: $*" >&2; exit 2; }
[[ $repeat =~ ^[1-9][0-9]*$ ]] || die "REPEAT=$repeat: expected a positive integer"
[[ $min_time =~ ^[0-9]*\.?[0-9]+$ ]] || die "MIN_TIME=$min_time: expected seconds, such as 2 or 0.5"
[ -x "$hora_bin" ] || die "$hora_bin is missing: build it with make bench-gpu (or CGO_ENABLED=0 go build -o $hora_bin ./bench/gpu) and set HORA_GPU_BENCH"
"$python" -c 'import torch' 2>/dev/null || die "$python has no PyTorch (set PYTHON)"
if [[ $dev == cuda* ]]; then
	"$python" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' ||
		die "PyTorch ($python) sees no CUDA GPU: run this on a machine with an NVIDIA GPU (DEVICE=cpu smoke-tests the scripts)"
fi

hora_args=(-device "$dev" -min-time "${min_time}s")
torch_args=(--device "$dev" --min-time "$min_time" --image-size "$image")
if [ "${TF32:-1}" = 0 ]; then
	hora_args+=(-tf32=false)
	torch_args+=(--no-tf32)
fi
if [ "${SMALL:-0}" = 1 ]; then
	hora_args+=(-small)
	torch_args+=(--small)
fi
if [[ " $groups " == *" resnet18 "* ]]; then
	if [ ! -s "$onnx" ]; then
		echo "bench/gpu: exporting ResNet-18 (3x${image}x${image}) to $onnx" >&2
		mkdir -p "$(dirname "$onnx")"
		"$python" bench/gpu/torch_gpu_bench.py --write-onnx "$onnx" --image-size "$image"
	fi
	hora_args+=(-onnx "$onnx")
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
results=$out/results.jsonl
: >"$results"

hora() { "$hora_bin" "${hora_args[@]}" "$1" >>"$results"; }
torch() { "$python" bench/gpu/torch_gpu_bench.py "${torch_args[@]}" "$1" >>"$results"; }

start=$SECONDS
for g in $groups; do
	for i in $(seq "$repeat"); do
		if ((i % 2)); then first=hora second=torch; else first=torch second=hora; fi
		echo "bench/gpu: $g, run $i/$repeat: $first, then $second ($((SECONDS - start)) s so far)" >&2
		$first "$g"
		$second "$g"
	done
done
echo "bench/gpu: done in $((SECONDS - start)) s" >&2
[ -z "${BENCH_JSON:-}" ] || cp "$results" "$BENCH_JSON"
"$python" bench/gpu/gpu_table.py -repeat "$repeat" "$results"
