#!/usr/bin/env bash
# bundle.sh [DIR]: `make gpu-check`. Cross-builds everything the one-shot
# GPU check needs into DIR [build/gpu], a folder of at most 60 MB to copy
# to a GPU machine that has no Go, then prints the one command to run
# there. When this machine has an NVIDIA GPU it also runs that command.
#
# DIR holds:
#   check.sh                the script to run there (scripts/gpu-check/check.sh)
#   bin/*.gz                the device/cuda and dist/nccl test binaries,
#                           hora-gpu-bench and train, stripped and gzipped
#   data/                   Fashion-MNIST's idx files
#   configs/                configs/fashion-mnist-cnn.yaml
#   bench/                  bench/gpu's scripts and bench/table.py
# The ResNet-18 ONNX file of the benchmark (45 MB of weights, which do not
# compress) is not in the folder: bench/gpu/run.sh exports it there with
# PyTorch in a few seconds.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-build/gpu}
go=${GO:-go}
data=${FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
max_mb=60

die() { echo "gpu-check: $*" >&2; exit 2; }
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
	[ -s "$data/$f.gz" ] || [ -s "$data/$f" ] ||
		die "$data/$f(.gz) is missing: install Debian's dataset-fashion-mnist (make deps) or set FASHION_MNIST"
done

rm -rf "$out"
mkdir -p "$out/bin" "$out/data" "$out/configs" "$out/bench/gpu"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "gpu-check: cross-building for linux/amd64 into $out" >&2
export CGO_ENABLED=0 GOOS=linux GOARCH=amd64
flags=(-ldflags='-s -w')
$go test -c "${flags[@]}" -o "$tmp/cuda.test" ./device/cuda/
$go test -c "${flags[@]}" -o "$tmp/nccl.test" ./dist/nccl/
$go build "${flags[@]}" -o "$tmp/hora-gpu-bench" ./bench/gpu
$go build "${flags[@]}" -o "$tmp/train" ./cmd/train
for b in cuda.test nccl.test hora-gpu-bench train; do
	gzip -6 -c "$tmp/$b" >"$out/bin/$b.gz"
done

cp "$data"/*-ubyte* "$out/data/"
cp configs/fashion-mnist-cnn.yaml "$out/configs/"
cp bench/gpu/run.sh bench/gpu/torch_gpu_bench.py bench/gpu/gpu_table.py "$out/bench/gpu/"
cp bench/table.py "$out/bench/"
cp scripts/gpu-check/check.sh "$out/check.sh"
chmod +x "$out/check.sh" "$out/bench/gpu/run.sh"

mb=$(du -sm "$out" | cut -f1)
[ "$mb" -le "$max_mb" ] || die "$out is $mb MB, over the $max_mb MB a GPU machine's copy allows"
echo "gpu-check: $out is ready ($mb MB). On the GPU machine, with the folder copied there:" >&2
echo
echo "    bash $out/check.sh gpu-report"
echo
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
	echo "gpu-check: this machine has a GPU; running it here" >&2
	bash "$out/check.sh" build/gpu-report
fi
