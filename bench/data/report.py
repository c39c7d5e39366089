#!/usr/bin/python3
"""Prints the table of make bench-data (bench/data.sh) from its folder.

Usage: /usr/bin/python3 bench/data/report.py OUTDIR
"""
import glob
import json
import os
import statistics
import sys


def records(run, kind="epoch"):
    path = os.path.join(run, "metrics.jsonl")
    return [r for r in map(json.loads, open(path)) if r.get("kind") == kind]


def last(run):
    return records(run)[-1]


def lines(path):
    return [json.loads(line) for line in open(path) if line.strip()]


def main(out):
    idx, png = last(os.path.join(out, "idx-cnn")), last(os.path.join(out, "png-cnn"))
    print("### 1. Fashion-MNIST: PNG image folder against IDX files (CNN, 1 epoch)\n")
    print("| input | test accuracy | training samples/s |")
    print("|---|---|---|")
    print("| IDX files | %.4f | %.0f |" % (idx["test_accuracy"], idx["samples_per_sec"]))
    print("| PNG folder | %.4f | %.0f |" % (png["test_accuracy"], png["samples_per_sec"]))
    print("\ndifference %.4f (goal: within 0.005)\n" % abs(idx["test_accuracy"] - png["test_accuracy"]))
    print("| loader alone (60,000 PNGs, %d workers) | images/s | × the CNN's training samples/s |" % lines(os.path.join(out, "loader.jsonl"))[0]["workers"])
    print("|---|---|---|")
    for r in lines(os.path.join(out, "loader.jsonl")):
        what = ("cached" if r["cached"] else "decoded at every use") + (", RandomResizedCrop + flip" if r["crop"] else "")
        print("| %s | %.0f | %.1f× |" % (what, r["images_per_sec"], r["images_per_sec"] / png["samples_per_sec"]))

    print("\n### 2. Transfer learning: 1,000 real digits (validation: 9,000), 10 epochs\n")
    print("| network | validation accuracy per seed | mean |")
    print("|---|---|---|")
    for key, what in [("scratch", "(a) CNN from scratch"),
                      ("frozen", "(b) Fashion-MNIST CNN, new head, convolutions frozen"),
                      ("head", "(b') the same, all but the new head frozen"),
                      ("all", "(c) the same, nothing frozen")]:
        accs = [last(r)["test_accuracy"] for r in sorted(glob.glob(os.path.join(out, "digits-%s-*" % key))) if os.path.isdir(r)]
        print("| %s | %s | %.4f |" % (what, " ".join("%.4f" % a for a in accs), statistics.mean(accs)))

    print("\n### 3. scikit-learn's tables (the same split for both)\n")
    sk = {r["table"]: r for r in lines(os.path.join(out, "sklearn.jsonl"))}
    print("| table | rows (train/val) | Hora MLP | scikit-learn |")
    print("|---|---|---|---|")
    for name, file in [("iris", "iris"), ("wine", "wine_data"), ("breast-cancer", "breast_cancer")]:
        r, s = last(os.path.join(out, "table-" + name)), sk[file]
        print("| %s | %d/%d | accuracy %.4f | LogisticRegression %.4f |" % (name, s["train_rows"], s["val_rows"], r["test_accuracy"], s["val_accuracy"]))
    r, s = last(os.path.join(out, "table-boston")), sk["boston_house_prices"]
    print("| boston (regression) | %d/%d | RMSE %.3f, R² %.4f | LinearRegression RMSE %.3f, R² %.4f |"
          % (s["train_rows"], s["val_rows"], r["test_rmse"], r["test_r2"], s["val_rmse"], s["val_r2"]))

    print("\n### 4. torchvision networks fine-tuned at 3×64×64 (5 classes), then exported\n")
    print("| network | train loss, first → last epoch | validation accuracy | samples/s | onnxruntime vs Hora, max |Δp| |")
    print("|---|---|---|---|---|")
    for m in ["resnet18", "mobilenet_v2"]:
        ep = records(os.path.join(out, "shapes-" + m))
        ort = json.load(open(os.path.join(out, "shapes-%s.ort.json" % m)))
        print("| %s | %.4f → %.4f | %.4f | %.0f | %.1e (%d images, same classes: %s) |"
              % (m, ep[0]["train_loss"], ep[-1]["train_loss"], ep[-1]["test_accuracy"],
                 statistics.median(e["samples_per_sec"] for e in ep), ort["max_abs_diff"], ort["images"], ort["same_classes"]))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
