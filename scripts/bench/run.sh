#!/usr/bin/env bash
# make bench: one epoch of each shipped config with Hora and with PyTorch,
# in the same run on the same machine, printed side by side.
# REPEAT=N runs each measurement N times and reports the median.
set -euo pipefail
cd "$(dirname "$0")/../.."
repeat=${REPEAT:-1}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
torch_env=(OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=SkylakeX MALLOC_MMAP_THRESHOLD_=30000000 MALLOC_TRIM_THRESHOLD_=1000000000)

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
field() { python3 -c "import json,sys; print(json.loads(sys.stdin.readline())['$1'])"; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(date -u +%F)"
printf '| model | framework | samples/s (median of %s) | test accuracy after 1 epoch |\n|---|---|---|---|\n' "$repeat"
for model in mlp cnn; do
	: >"$out/hora.$model" ; : >"$out/torch.$model"
	for i in $(seq "$repeat"); do
		bin/train -config "configs/fashion-mnist-$model.yaml" -set train.epochs=1 -set output.progress=false \
			-out "$out/run-$model-$i" >/dev/null
		tail -n1 "$out/run-$model-$i/metrics.jsonl" >>"$out/hora.$model"
		env "${torch_env[@]}" /usr/bin/python3 scripts/bench/pytorch_train.py "$model" >>"$out/torch.$model"
	done
	for fw in hora torch; do
		sps=$(while read -r l; do echo "$l" | field samples_per_sec; done <"$out/$fw.$model" | median)
		acc=$(while read -r l; do echo "$l" | field test_accuracy; done <"$out/$fw.$model" | median)
		name=$([ $fw = hora ] && echo "Hora" || echo "PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)')")
		printf '| %s | %s | %.0f | %.4f |\n' "$model" "$name" "$sps" "$acc"
	done
done
