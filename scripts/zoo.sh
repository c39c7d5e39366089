#!/bin/sh
# zoo.sh trains every shipped config once, one after the other, and prints
# a Markdown table of the final test metrics and the wall time of each
# (the numbers of README's model zoo and docs/models/). Run it with
# `make zoo`; ZOO="cnn resnet" trains only those configs.
set -e
bin=${BIN:-bin}/train
out=${ZOO_DIR:-runs/zoo}
configs=${ZOO:-"mlp lenet5 cnn mobilenet transformer resnet resnet20 charlm"}
mkdir -p "$out"
echo "| config | epochs | final test loss | final test accuracy | best test accuracy | wall time |"
echo "|---|---|---|---|---|---|"
for name in $configs; do
	case $name in
	charlm) cfg=configs/fortunes-charlm.yaml ;;
	*) cfg=configs/fashion-mnist-$name.yaml ;;
	esac
	start=$(date +%s)
	"$bin" -config "$cfg" -q -overwrite -set output.progress=false -out "$out/$name" > "$out/$name.out" 2>&1 || { echo "| $cfg | failed: see $out/$name.out |"; continue; }
	end=$(date +%s)
	python3 - "$out/$name/metrics.jsonl" "$cfg" $((end - start)) <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
ep = [r for r in recs if r.get("kind") == "epoch"]
ev = [r for r in recs if r.get("kind") in ("eval",)]
last = ep[-1]
best = max(r["test_accuracy"] for r in ev) if ev else last["test_accuracy"]
secs = int(sys.argv[3])
print(f"| {sys.argv[2]} | {last['epoch']} | {last['test_loss']:.4f} | {last['test_accuracy']:.4f} | {best:.4f} | {secs // 60} min {secs % 60} s |")
PY
done
