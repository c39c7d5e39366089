#!/usr/bin/python3
"""Export seeded PyTorch recurrent layers and interpolations to ONNX and
check that Hora's importer reproduces PyTorch's outputs.

Each case is written in the ONNX backend-test layout

    DIR/<case>/model.onnx
    DIR/<case>/test_data_set_0/input_0.pb, output_K.pb

and the cases are then run with `go run ./cmd/onnxcheck DIR`.

Usage (from the repository root, with Debian's python3-torch and
python3-onnx):

    /usr/bin/python3 scripts/onnx_rnn_check.py [--out DIR] [--keep] [--no-run]

Cases: nn.LSTM, nn.GRU and nn.RNN, batch_first or not, 1 or 2 layers,
uni- or bidirectional, with and without initial states, on packed
sequences of different lengths (sequence_lens), exported with opsets 13
to 17; F.interpolate / nn.Upsample in nearest, bilinear
(align_corners on and off), bicubic and trilinear modes.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
from onnx import numpy_helper


def save_case(root, name, model, inputs, input_names, output_names, opset,
              dynamic_axes=None):
    """Exports model with torch.onnx.export and stores inputs and PyTorch's
    outputs next to it."""
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    model.eval()
    with torch.no_grad():
        outs = model(*inputs)
    if isinstance(outs, torch.Tensor):
        outs = (outs,)
    flat = []
    for o in outs:
        if isinstance(o, (tuple, list)):
            flat.extend(o)
        else:
            flat.append(o)
    torch.onnx.export(model, tuple(inputs), os.path.join(d, "model.onnx"),
                      input_names=input_names, output_names=output_names,
                      opset_version=opset, dynamic_axes=dynamic_axes)
    onnx.checker.check_model(onnx.load(os.path.join(d, "model.onnx")))
    for i, x in enumerate(inputs):
        t = numpy_helper.from_array(x.detach().numpy(), input_names[i])
        with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(t.SerializeToString())
    for i, y in enumerate(flat):
        t = numpy_helper.from_array(y.detach().numpy(), output_names[i])
        with open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "wb") as f:
            f.write(t.SerializeToString())


class WithState(torch.nn.Module):
    """Runs a recurrent layer from given initial states."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, *state):
        if len(state) == 2:
            y, (h, c) = self.rnn(x, (state[0], state[1]))
            return y, h, c
        if len(state) == 1:
            y, h = self.rnn(x, state[0])
            return y, h
        out = self.rnn(x)
        if isinstance(out[1], tuple):
            return out[0], out[1][0], out[1][1]
        return out


class Packed(torch.nn.Module):
    """Runs a recurrent layer on padded sequences of different lengths
    (exported with the ONNX input sequence_lens)."""

    def __init__(self, rnn, unsorted):
        super().__init__()
        self.rnn = rnn
        self.unsorted = unsorted

    def forward(self, x, lens):
        from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
        # enforce_sorted=False exports TopK, Gather and ScatterElements
        # around the recurrent node.
        p = pack_padded_sequence(x, lens, enforce_sorted=not self.unsorted)
        y, state = self.rnn(p)
        y, _ = pad_packed_sequence(y, total_length=x.shape[0])
        if isinstance(state, tuple):
            return y, state[0], state[1]
        return y, state


class Interp(torch.nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.kw = kw

    def forward(self, x):
        return torch.nn.functional.interpolate(x, **self.kw)


def rnn_cases(root):
    names = []
    gen = torch.Generator().manual_seed(0)
    seq, batch, inp, hid = 5, 3, 4, 6
    configs = [
        # kind, layers, bidirectional, batch_first, initial state, opset
        ("LSTM", 1, False, False, False, 13),
        ("LSTM", 2, True, False, True, 14),
        ("LSTM", 2, False, True, False, 17),
        ("LSTM", 1, True, True, True, 15),
        ("GRU", 1, False, False, False, 13),
        ("GRU", 2, True, False, True, 14),
        ("GRU", 2, False, True, True, 16),
        ("GRU", 1, True, True, False, 17),
        ("RNN", 2, True, False, True, 14),
        ("RNN", 1, False, True, False, 17),
    ]
    for n, (kind, layers, bidir, bf, state, opset) in enumerate(configs):
        torch.manual_seed(100 + n)
        cls = getattr(torch.nn, kind)
        kw = dict(input_size=inp, hidden_size=hid, num_layers=layers,
                  bidirectional=bidir, batch_first=bf)
        if kind == "RNN" and n % 2 == 1:
            kw["nonlinearity"] = "relu"
        rnn = cls(**kw)
        x = torch.randn((batch, seq, inp) if bf else (seq, batch, inp), generator=gen)
        dirs = 2 if bidir else 1
        inputs, in_names = [x], ["x"]
        if state:
            inputs.append(torch.randn(layers * dirs, batch, hid, generator=gen))
            in_names.append("h0")
            if kind == "LSTM":
                inputs.append(torch.randn(layers * dirs, batch, hid, generator=gen))
                in_names.append("c0")
        out_names = ["y", "h"] + (["c"] if kind == "LSTM" else [])
        name = (f"torch_{kind.lower()}_l{layers}{'_bi' if bidir else ''}"
                f"{'_bf' if bf else ''}{'_state' if state else ''}_op{opset}")
        save_case(root, name, WithState(rnn), inputs, in_names, out_names, opset)
        names.append(name)
    for kind, bidir, unsorted, opset in [("LSTM", True, False, 14), ("LSTM", False, False, 17),
                                     ("GRU", False, False, 17), ("GRU", True, False, 13),
                                     ("RNN", True, False, 15), ("LSTM", True, True, 16)]:
        torch.manual_seed(7)
        rnn = getattr(torch.nn, kind)(input_size=inp, hidden_size=hid, bidirectional=bidir)
        x = torch.randn(seq, 4, inp, generator=gen)
        lens = [seq, 2, 3, 1] if unsorted else [seq, 3, 2, 1]
        lens = torch.tensor(lens, dtype=torch.int64)
        out_names = ["y", "h"] + (["c"] if kind == "LSTM" else [])
        name = f"torch_{kind.lower()}_packed{'_bi' if bidir else ''}{'_unsorted' if unsorted else ''}_op{opset}"
        save_case(root, name, Packed(rnn, unsorted), [x, lens], ["x", "lens"], out_names, opset)
        names.append(name)
    return names


def interp_cases(root):
    names = []
    gen = torch.Generator().manual_seed(1)
    x4 = torch.randn(2, 3, 5, 7, generator=gen)
    x5 = torch.randn(1, 2, 3, 4, 5, generator=gen)
    configs = [
        ("nearest_x2", x4, dict(scale_factor=2, mode="nearest"), 13),
        ("nearest_size", x4, dict(size=(9, 4), mode="nearest"), 13),
        ("nearest_x2_op11", x4, dict(scale_factor=2, mode="nearest"), 11),
        ("bilinear_x2", x4, dict(scale_factor=2, mode="bilinear", align_corners=False), 13),
        ("bilinear_ac", x4, dict(scale_factor=2, mode="bilinear", align_corners=True), 13),
        ("bilinear_size_down", x4, dict(size=(3, 4), mode="bilinear", align_corners=False), 13),
        ("bilinear_size_ac_op11", x4, dict(size=(8, 11), mode="bilinear", align_corners=True), 11),
        ("bicubic_x2", x4, dict(scale_factor=2, mode="bicubic", align_corners=False), 13),
        ("bicubic_ac", x4, dict(size=(6, 9), mode="bicubic", align_corners=True), 13),
        ("trilinear", x5, dict(scale_factor=(2, 1.5, 0.6), mode="trilinear", align_corners=False), 17),
    ]
    for name, x, kw, opset in configs:
        name = "torch_interp_" + name
        save_case(root, name, Interp(**kw), [x], ["x"], ["y"], opset)
        names.append(name)
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="folder for the cases (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--no-run", action="store_true", help="only write the cases")
    args = ap.parse_args()
    root = args.out or tempfile.mkdtemp(prefix="onnx_rnn_check_")
    os.makedirs(root, exist_ok=True)
    import warnings
    warnings.filterwarnings("ignore")
    names = rnn_cases(root) + interp_cases(root)
    print(f"wrote {len(names)} cases to {root}", file=sys.stderr)
    rc = 0
    if not args.no_run:
        rc = subprocess.call(["go", "run", "./cmd/onnxcheck", root])
    if not args.out and not args.keep and not args.no_run:
        shutil.rmtree(root)
    return rc


if __name__ == "__main__":
    sys.exit(main())
