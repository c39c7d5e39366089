#!/usr/bin/python3
"""Splits scikit-learn's bundled CSV tables into training and validation
files, and reports scikit-learn's linear models on the same split.

Usage: /usr/bin/python3 bench/data/tables.py OUTDIR

For iris, wine and breast_cancer (classification) it writes
OUTDIR/<name>/{train,val}.csv (a header row, then the features and a
"label" column; a stratified 75/25 split, seed 0) and prints one JSON line
with the validation accuracy of LogisticRegression on standardized
features. For boston_house_prices (regression, label MEDV) it prints the
validation RMSE and R² of LinearRegression. Hora's bench trains on the same
files (bench/data.sh), so the two are compared on the very same rows.
"""
import csv
import json
import os
import sys

import numpy as np
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import mean_squared_error, r2_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

SKLEARN_DATA = "/usr/lib/python3/dist-packages/sklearn/datasets/data"


def read(name, header):
    """Returns the column names, the features and the labels of a file."""
    with open(os.path.join(SKLEARN_DATA, name + ".csv")) as f:
        rows = list(csv.reader(f))
    rows = rows[1:]  # the count line
    if header:
        names, rows = rows[0], rows[1:]
    else:
        names = ["f%d" % i for i in range(len(rows[0]) - 1)] + ["label"]
    data = np.array([[float(v) for v in r] for r in rows])
    return names, data[:, :-1], data[:, -1]


def write(path, names, x, y, integer_label):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(names)
        for xi, yi in zip(x, y):
            w.writerow([repr(float(v)) for v in xi] + [int(yi) if integer_label else repr(float(yi))])


def main(out):
    for name in ["iris", "wine_data", "breast_cancer"]:
        names, x, y = read(name, header=False)
        xtr, xva, ytr, yva = train_test_split(x, y, test_size=0.25, random_state=0, stratify=y)
        write(os.path.join(out, name, "train.csv"), names, xtr, ytr, True)
        write(os.path.join(out, name, "val.csv"), names, xva, yva, True)
        scaler = StandardScaler().fit(xtr)
        model = LogisticRegression(max_iter=5000).fit(scaler.transform(xtr), ytr)
        acc = float((model.predict(scaler.transform(xva)) == yva).mean())
        print(json.dumps({"table": name, "train_rows": len(ytr), "val_rows": len(yva),
                          "model": "LogisticRegression", "val_accuracy": acc}))
    names, x, y = read("boston_house_prices", header=True)
    xtr, xva, ytr, yva = train_test_split(x, y, test_size=0.25, random_state=0)
    write(os.path.join(out, "boston_house_prices", "train.csv"), names, xtr, ytr, False)
    write(os.path.join(out, "boston_house_prices", "val.csv"), names, xva, yva, False)
    scaler = StandardScaler().fit(xtr)
    model = LinearRegression().fit(scaler.transform(xtr), ytr)
    pred = model.predict(scaler.transform(xva))
    print(json.dumps({"table": "boston_house_prices", "train_rows": len(ytr), "val_rows": len(yva),
                      "model": "LinearRegression", "val_rmse": float(np.sqrt(mean_squared_error(yva, pred))),
                      "val_r2": float(r2_score(yva, pred))}))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
