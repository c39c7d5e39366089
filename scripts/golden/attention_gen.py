#!/usr/bin/python3
"""Generate PyTorch golden fixtures for Hora's attention layers and CharLM.

Run from the repository root with Debian's PyTorch:

    /usr/bin/python3 scripts/golden/attention_gen.py

Writes layers/testdata/golden/attention/<case>.json (a folder of its own:
layers' TestGolden reads every file of layers/testdata/golden):

  mha*       torch.nn.MultiheadAttention(batch_first=True), self-attention
  encoder_*  torch.nn.TransformerEncoderLayer(batch_first=True, dropout=0)
  charlm     a tiny decoder-only character Transformer (models.CharLM; read
             by models/transformer_test.go)

Each layer case holds the parameters (biases and norms randomised so that a
wrong name or a missing term shows), the input x, the output, a fixed random
tensor r and the gradient of sum(out * r) with respect to x. The CharLM case
holds token ids, targets, the logits and the mean cross-entropy.

Seeds come from crc32 of the case name, so the output is reproducible.
"""

import json
import os
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT_DIR = os.path.join(ROOT, "layers", "testdata", "golden", "attention")

torch.set_num_threads(1)


def enc(t):
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.float32:
        return {"shape": list(t.shape), "dtype": "float32", "data": [float(x) for x in t.reshape(-1).tolist()]}
    if t.dtype == torch.int64:
        return {"shape": list(t.shape), "dtype": "int64", "data": [int(x) for x in t.reshape(-1).tolist()]}
    raise TypeError(t.dtype)


def write(case, obj):
    os.makedirs(OUT_DIR, exist_ok=True)
    path = os.path.join(OUT_DIR, case + ".json")
    with open(path, "w") as f:
        json.dump(obj, f, separators=(",", ":"), allow_nan=False)
        f.write("\n")
    print(path)


def seed(case):
    torch.manual_seed(zlib.crc32(case.encode()) & 0x7FFFFFFF)


def causal_mask(t):
    return torch.triu(torch.full((t, t), float("-inf")), diagonal=1)


def randomize(m):
    """Give biases and LayerNorm weights non-default values."""
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("bias"):
                p.uniform_(-0.5, 0.5)
        for mod in m.modules():
            if isinstance(mod, nn.LayerNorm):
                mod.weight.uniform_(0.5, 1.5)


def layer_case(case, config, module, forward, shape):
    randomize(module)
    x = torch.randn(*shape, requires_grad=True)
    out = forward(module, x)
    r = torch.randn_like(out)
    (out * r).sum().backward()
    write(case, {
        "case": case,
        "config": config,
        "params": {k: enc(v) for k, v in module.state_dict().items()},
        "input": enc(x),
        "output": enc(out),
        "grad_output": enc(r),
        "grad_input": enc(x.grad),
    })


def mha_cases():
    for case, causal, bias in [("mha", False, True), ("mha_causal", True, True), ("mha_causal_nobias", True, False)]:
        seed(case)
        n, t, d, h = 2, 5, 8, 2
        m = nn.MultiheadAttention(d, h, bias=bias, batch_first=True)

        def fwd(m, x, causal=causal, t=t):
            mask = causal_mask(t) if causal else None
            return m(x, x, x, attn_mask=mask, need_weights=False)[0]

        layer_case(case, {"dim": d, "heads": h, "causal": causal, "bias": bias}, m, fwd, (n, t, d))


def encoder_cases():
    for case, norm_first, act, causal in [
        ("encoder_post_relu", False, "relu", False),
        ("encoder_pre_gelu_causal", True, "gelu", True),
    ]:
        seed(case)
        n, t, d, h, ff = 2, 6, 8, 2, 16
        m = nn.TransformerEncoderLayer(d, h, dim_feedforward=ff, dropout=0.0, activation=act,
                                       batch_first=True, norm_first=norm_first)
        m.train()  # dropout 0; the eval fast path is not taken with gradients anyway

        def fwd(m, x, causal=causal, t=t):
            return m(x, src_mask=causal_mask(t) if causal else None)

        layer_case(case, {"dim": d, "heads": h, "ff": ff, "norm_first": norm_first, "activation": act, "causal": causal},
                   m, fwd, (n, t, d))


class CharLM(nn.Module):
    """The Go models.CharLM: token and learned positional embeddings,
    pre-norm causal GELU blocks, a final LayerNorm and a linear head."""

    def __init__(self, vocab, context, dim, heads, layers, ff):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, dim)
        self.pos_emb = nn.Embedding(context, dim)
        self.blocks = nn.ModuleList([
            nn.TransformerEncoderLayer(dim, heads, dim_feedforward=ff, dropout=0.0, activation="gelu",
                                       batch_first=True, norm_first=True)
            for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(t))
        mask = causal_mask(t)
        for b in self.blocks:
            x = b(x, src_mask=mask)
        return self.head(self.ln_f(x))


def charlm_case():
    case = "charlm"
    seed(case)
    cfg = {"vocab": 11, "context": 8, "dim": 16, "heads": 2, "layers": 2, "ff": 32}
    m = CharLM(**cfg)
    randomize(m)
    m.eval()
    n, t = 3, 7
    idx = torch.randint(0, cfg["vocab"], (n, t))
    targets = torch.randint(0, cfg["vocab"], (n, t))
    with torch.no_grad():
        logits = m(idx)
        loss = F.cross_entropy(logits.reshape(-1, cfg["vocab"]), targets.reshape(-1))
    write(case, {
        "case": case,
        "config": cfg,
        "params": {k: enc(v) for k, v in m.state_dict().items()},
        "input": enc(idx),
        "targets": enc(targets),
        "output": enc(logits),
        "loss": float(loss),
    })


def main():
    mha_cases()
    encoder_cases()
    charlm_case()


if __name__ == "__main__":
    main()
