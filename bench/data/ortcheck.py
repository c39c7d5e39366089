#!/usr/bin/python3
"""Runs a model Hora exported in onnxruntime and compares its class
probabilities with those Hora's own `train predict` printed for the same
image files.

Usage: /usr/bin/python3 bench/data/ortcheck.py MODEL.onnx PREDICTIONS.jsonl

The images (PNG, of the model's size: no resizing) are transformed as the
model's doc_string says (Hora writes the run's data.json there): pixels
p/255, then (p - mean) * (1/std) per channel, in float32 as Hora does. One
JSON object is printed: the images compared and the largest absolute
difference of a probability. onnxruntime runs through scripts/ort/run.js.
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from PIL import Image

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def main(model_path, predictions_path):
    info = json.loads(onnx.load(model_path).doc_string)
    image = info["image"]
    mean = np.array(image.get("mean") or [0.0] * image["channels"], dtype=np.float32).reshape(-1, 1, 1)
    std = np.array(image.get("std") or [1.0] * image["channels"], dtype=np.float32).reshape(-1, 1, 1)
    preds = [json.loads(line) for line in open(predictions_path)]
    batch = []
    for p in preds:
        img = Image.open(p["file"]).convert("RGB" if image["channels"] == 3 else "L")
        if img.size != (image["width"], image["height"]):
            sys.exit("%s: %dx%d, expected the model's %dx%d (this check does not resize)"
                     % (p["file"], img.size[0], img.size[1], image["width"], image["height"]))
        x = np.asarray(img, dtype=np.float32).reshape(img.size[1], img.size[0], -1).transpose(2, 0, 1)
        batch.append((x / np.float32(255) - mean) * (np.float32(1) / std))
    x = np.stack(batch).astype(np.float32)
    request = {"model": os.path.abspath(model_path),
               "inputs": {"input": {"type": "float32", "dims": list(x.shape), "data": x.ravel().tolist()}}}
    res = subprocess.run(["node", os.path.join(ROOT, "scripts", "ort", "run.js")], input=json.dumps(request),
                         capture_output=True, text=True, check=True)
    out = json.loads(res.stdout)["outputs"]["output"]
    logits = np.array(out["data"], dtype=np.float64).reshape(out["dims"])
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs = e / e.sum(axis=1, keepdims=True)
    hora = np.array([p["probabilities"] for p in preds])
    print(json.dumps({"model": model_path, "images": len(preds),
                      "max_abs_diff": float(np.abs(probs - hora).max()),
                      "same_classes": bool((probs.argmax(1) == hora.argmax(1)).all())}))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
