#!/usr/bin/python3
"""Generate PyTorch golden fixtures for Hora's Go tests.

Run from the repository root with Debian's PyTorch:

    /usr/bin/python3 scripts/golden/gen.py

Writes:
  layers/testdata/golden/<case>.json       layer / loss forward+backward cases
  optim/testdata/golden/<case>.json        optimizer step cases, clip_grad_norm
  optim/testdata/golden/sched_<case>.json  LR scheduler cases

All randomness comes from torch.manual_seed with a per-case seed derived from
the case name (crc32), so the output is reproducible and independent of the
order in which cases are generated.
"""

import json
import math
import os
import sys
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LAYER_DIR = os.path.join(ROOT, "layers", "testdata", "golden")
OPTIM_DIR = os.path.join(ROOT, "optim", "testdata", "golden")

torch.set_num_threads(1)  # deterministic reductions on CPU


# --------------------------------------------------------------------------
# encoding helpers
# --------------------------------------------------------------------------

def enc(t):
    """Tensor -> {"shape", "dtype", "data"} with full precision values."""
    if t is None:
        return None
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.float32:
        dtype = "float32"
        data = [float(x) for x in t.reshape(-1).tolist()]
    elif t.dtype == torch.int64:
        dtype = "int64"
        data = [int(x) for x in t.reshape(-1).tolist()]
    else:
        raise TypeError("unsupported dtype %s" % t.dtype)
    return {"shape": list(t.shape), "dtype": dtype, "data": data}


def jsonable(v):
    if isinstance(v, tuple):
        return [jsonable(x) for x in v]
    if isinstance(v, list):
        return [jsonable(x) for x in v]
    if isinstance(v, dict):
        return {k: jsonable(x) for k, x in v.items()}
    return v


def seed_for(name):
    return zlib.crc32(name.encode("utf-8")) & 0x7FFFFFFF


WRITTEN = []


def write(directory, case, obj):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, case + ".json")
    with open(path, "w") as f:
        # json uses repr(float): shortest string that round-trips exactly.
        json.dump(obj, f, separators=(",", ":"), allow_nan=False)
        f.write("\n")
    WRITTEN.append(path)


# --------------------------------------------------------------------------
# A) layers and losses
# --------------------------------------------------------------------------

def randomize_norm(m):
    """Give normalization layers non-trivial affine params and running stats."""
    with torch.no_grad():
        if getattr(m, "weight", None) is not None:
            m.weight.copy_(torch.rand_like(m.weight) + 0.5)     # in [0.5, 1.5)
        if getattr(m, "bias", None) is not None:
            m.bias.copy_(torch.randn_like(m.bias) * 0.5)
        if getattr(m, "running_mean", None) is not None:
            m.running_mean.copy_(torch.randn_like(m.running_mean) * 0.5)
        if getattr(m, "running_var", None) is not None:
            m.running_var.copy_(torch.rand_like(m.running_var) + 0.5)


def buffers_of(m):
    return {k: enc(v.clone()) for k, v in m.named_buffers()
            if not k.endswith("num_batches_tracked")}


def layer_case(case, layer, config, inputs_fn, mode="train", setup=None):
    """inputs_fn() -> list of tensors (created after the module, same RNG)."""
    torch.manual_seed(seed_for(case))
    m = getattr(nn, layer)(**config)
    if setup is not None:
        setup(m)
    m.train(mode == "train")

    params = {k: enc(p.detach().clone()) for k, p in m.named_parameters()}
    buffers = buffers_of(m)

    inputs = inputs_fn()
    leaf_inputs = []
    for x in inputs:
        if x.dtype.is_floating_point:
            x = x.detach().clone().requires_grad_(True)
        leaf_inputs.append(x)
    inputs_before = [enc(x) for x in leaf_inputs]

    out = m(*leaf_inputs)
    if out.dim() == 0:
        g = torch.tensor(1.0, dtype=out.dtype)
    else:
        g = torch.randn(out.shape, dtype=out.dtype)
    out.backward(g)

    grad_inputs = []
    for x in leaf_inputs:
        if x.dtype.is_floating_point:
            gi = x.grad if x.grad is not None else torch.zeros_like(x)
            grad_inputs.append(enc(gi))
        else:
            grad_inputs.append(None)
    grad_params = {}
    for k, p in m.named_parameters():
        gp = p.grad if p.grad is not None else torch.zeros_like(p)
        grad_params[k] = enc(gp)

    write(LAYER_DIR, case, {
        "case": case,
        "layer": layer,
        "config": jsonable(config),
        "mode": mode,
        "params": params,
        "buffers": buffers,
        "inputs": inputs_before,
        "output": enc(out),
        "grad_output": enc(g),
        "grad_inputs": grad_inputs,
        "grad_params": grad_params,
        "buffers_after": buffers_of(m),
    })


def randn(*shape):
    return lambda: [torch.randn(*shape)]


def gen_layers():
    # ---- Linear
    layer_case("linear", "Linear", {"in_features": 5, "out_features": 3}, randn(4, 5))
    layer_case("linear_nobias", "Linear",
               {"in_features": 5, "out_features": 3, "bias": False}, randn(4, 5))
    layer_case("linear_3d", "Linear", {"in_features": 5, "out_features": 4}, randn(2, 3, 5))

    # ---- Conv2d
    layer_case("conv2d_3x3", "Conv2d",
               {"in_channels": 2, "out_channels": 3, "kernel_size": 3}, randn(2, 2, 5, 6))
    layer_case("conv2d_stride2_pad1", "Conv2d",
               {"in_channels": 2, "out_channels": 3, "kernel_size": 3, "stride": 2, "padding": 1},
               randn(2, 2, 7, 6))
    layer_case("conv2d_dilation2", "Conv2d",
               {"in_channels": 2, "out_channels": 3, "kernel_size": 3, "dilation": 2},
               randn(2, 2, 7, 7))
    layer_case("conv2d_groups2", "Conv2d",
               {"in_channels": 4, "out_channels": 6, "kernel_size": 3, "groups": 2, "padding": 1},
               randn(2, 4, 5, 5))
    layer_case("conv2d_nobias", "Conv2d",
               {"in_channels": 2, "out_channels": 3, "kernel_size": 3, "bias": False},
               randn(2, 2, 5, 5))
    layer_case("conv2d_kernel2x3_pad1x0", "Conv2d",
               {"in_channels": 2, "out_channels": 3, "kernel_size": (2, 3), "padding": (1, 0)},
               randn(2, 2, 4, 6))

    # ---- pooling
    layer_case("maxpool2d_k2", "MaxPool2d", {"kernel_size": 2}, randn(2, 3, 6, 6))
    layer_case("maxpool2d_k3_s2_p1", "MaxPool2d",
               {"kernel_size": 3, "stride": 2, "padding": 1}, randn(2, 3, 7, 6))
    layer_case("avgpool2d_k2", "AvgPool2d", {"kernel_size": 2}, randn(2, 3, 6, 6))
    layer_case("avgpool2d_k3_s2_p1_incpad", "AvgPool2d",
               {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": True},
               randn(2, 3, 7, 6))
    layer_case("avgpool2d_k3_s2_p1_excpad", "AvgPool2d",
               {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
               randn(2, 3, 7, 6))
    layer_case("adaptiveavgpool2d_1", "AdaptiveAvgPool2d", {"output_size": 1},
               randn(2, 3, 5, 4))

    # ---- normalization
    bn = {"num_features": 3, "eps": 1e-5, "momentum": 0.1}
    layer_case("batchnorm1d_nc_train", "BatchNorm1d", bn, randn(6, 3), "train", randomize_norm)
    layer_case("batchnorm1d_nc_eval", "BatchNorm1d", bn, randn(6, 3), "eval", randomize_norm)
    layer_case("batchnorm1d_ncl_train", "BatchNorm1d", bn, randn(4, 3, 5), "train", randomize_norm)
    layer_case("batchnorm1d_ncl_eval", "BatchNorm1d", bn, randn(4, 3, 5), "eval", randomize_norm)
    layer_case("batchnorm2d_train", "BatchNorm2d", bn, randn(2, 3, 4, 5), "train", randomize_norm)
    layer_case("batchnorm2d_eval", "BatchNorm2d", bn, randn(2, 3, 4, 5), "eval", randomize_norm)
    layer_case("batchnorm2d_train_default_init", "BatchNorm2d", bn, randn(2, 3, 4, 5), "train")
    layer_case("layernorm_last", "LayerNorm", {"normalized_shape": [6]}, randn(2, 3, 6),
               "train", randomize_norm)
    layer_case("layernorm_last2", "LayerNorm", {"normalized_shape": [3, 4]}, randn(2, 3, 4),
               "train", randomize_norm)

    # ---- shape / embedding
    layer_case("flatten", "Flatten", {}, randn(2, 3, 2, 2))
    layer_case("embedding", "Embedding", {"num_embeddings": 10, "embedding_dim": 4},
               lambda: [torch.tensor([[1, 3, 3, 7], [0, 3, 9, 1]], dtype=torch.int64)])

    # ---- activations
    act_in = randn(3, 7)
    layer_case("relu", "ReLU", {}, act_in)
    layer_case("leakyrelu_0.1", "LeakyReLU", {"negative_slope": 0.1}, act_in)
    layer_case("gelu", "GELU", {"approximate": "none"}, act_in)
    layer_case("silu", "SiLU", {}, act_in)
    layer_case("sigmoid", "Sigmoid", {}, act_in)
    layer_case("tanh", "Tanh", {}, act_in)
    layer_case("softmax_last", "Softmax", {"dim": -1}, randn(2, 3, 5))
    layer_case("logsoftmax_dim1", "LogSoftmax", {"dim": 1}, randn(2, 4, 3))
    layer_case("dropout_eval", "Dropout", {"p": 0.5}, randn(3, 5), "eval")

    # ---- losses
    def ce_inputs(n=4, c=5):
        return lambda: [torch.randn(n, c), torch.randint(0, c, (n,), dtype=torch.int64)]

    layer_case("crossentropy", "CrossEntropyLoss", {}, ce_inputs())
    layer_case("crossentropy_sum", "CrossEntropyLoss", {"reduction": "sum"}, ce_inputs())
    layer_case("crossentropy_labelsmooth0.1", "CrossEntropyLoss", {"label_smoothing": 0.1},
               ce_inputs())
    layer_case("crossentropy_4d", "CrossEntropyLoss", {},
               lambda: [torch.randn(2, 4, 3, 3), torch.randint(0, 4, (2, 3, 3), dtype=torch.int64)])
    layer_case("nllloss", "NLLLoss", {},
               lambda: [F.log_softmax(torch.randn(4, 5), dim=1),
                        torch.randint(0, 5, (4,), dtype=torch.int64)])
    layer_case("mseloss", "MSELoss", {}, lambda: [torch.randn(3, 4), torch.randn(3, 4)])
    layer_case("mseloss_sum", "MSELoss", {"reduction": "sum"},
               lambda: [torch.randn(3, 4), torch.randn(3, 4)])
    layer_case("bcewithlogits", "BCEWithLogitsLoss", {},
               lambda: [torch.randn(3, 4), torch.rand(3, 4)])

    def bce_extreme():
        x = torch.randn(2, 4)
        x[0] = torch.tensor([30.0, -30.0, 30.0, -30.0])
        t = torch.rand(2, 4)
        t[0, 0] = 1.0  # matches the +30 logit -> loss ~0
        t[0, 1] = 1.0  # opposes the -30 logit -> loss ~30
        return [x, t]

    layer_case("bcewithlogits_extreme", "BCEWithLogitsLoss", {}, bce_extreme)


# --------------------------------------------------------------------------
# B) optimizers
# --------------------------------------------------------------------------

STEPS = 5


def optim_case(case, optimizer, config):
    torch.manual_seed(seed_for(case))
    p0 = torch.randn(3, 4)
    p1 = torch.randn(4)
    grads = [[torch.randn(3, 4), torch.randn(4)] for _ in range(STEPS)]

    params = [p0.clone().requires_grad_(True), p1.clone().requires_grad_(True)]
    opt = getattr(torch.optim, optimizer)(params, **config)
    after = []
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = g.clone()
        opt.step()
        after.append([enc(p.detach().clone()) for p in params])

    defaults = {k: v for k, v in opt.defaults.items()
                if isinstance(v, (int, float, bool, str, tuple, list)) or v is None}
    write(OPTIM_DIR, case, {
        "case": case,
        "optimizer": optimizer,
        "config": jsonable(config),
        "defaults": jsonable(defaults),  # all hyper-parameters as resolved by torch
        "params": [enc(p0), enc(p1)],
        "grads": [[enc(g) for g in gs] for gs in grads],
        "after": after,
    })


def gen_optim():
    optim_case("sgd", "SGD", {"lr": 0.1})
    optim_case("sgd_momentum", "SGD", {"lr": 0.1, "momentum": 0.9})
    optim_case("sgd_nesterov", "SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True})
    optim_case("sgd_momentum_wd", "SGD",
               {"lr": 0.1, "momentum": 0.9, "dampening": 0.0, "weight_decay": 1e-2})
    optim_case("sgd_momentum_dampening0.5", "SGD",
               {"lr": 0.1, "momentum": 0.9, "dampening": 0.5})
    optim_case("adam", "Adam", {"lr": 1e-2})
    optim_case("adam_wd", "Adam", {"lr": 1e-2, "weight_decay": 1e-2})
    optim_case("adam_amsgrad", "Adam", {"lr": 1e-2, "amsgrad": True})
    optim_case("adamw", "AdamW", {"lr": 1e-2, "weight_decay": 1e-2})
    optim_case("adamw_wd0.1", "AdamW", {"lr": 1e-2, "weight_decay": 0.1})
    optim_case("rmsprop", "RMSprop", {"lr": 1e-2})
    optim_case("rmsprop_momentum", "RMSprop", {"lr": 1e-2, "momentum": 0.9})
    optim_case("rmsprop_centered", "RMSprop", {"lr": 1e-2, "centered": True})
    optim_case("adagrad", "Adagrad", {"lr": 1e-1})
    optim_case("adagrad_lrdecay_wd", "Adagrad",
               {"lr": 1e-1, "lr_decay": 0.01, "weight_decay": 0.01})


def clip_case(case, scale):
    torch.manual_seed(seed_for(case))
    params = [torch.zeros(3, 4, requires_grad=True), torch.zeros(4, requires_grad=True)]
    params[0].grad = torch.randn(3, 4) * scale
    params[1].grad = torch.randn(4) * scale
    before = [enc(p.grad.clone()) for p in params]
    total = torch.nn.utils.clip_grad_norm_(params, max_norm=1.0)
    write(OPTIM_DIR, case, {
        "case": case,
        "max_norm": 1.0,
        "grads_before": before,
        "grads_after": [enc(p.grad.clone()) for p in params],
        "total_norm": float(total),
    })


# --------------------------------------------------------------------------
# C) LR schedulers
# --------------------------------------------------------------------------

EPOCHS = 12
BASE_LR = 0.1


def run_sched(make):
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=BASE_LR)
    sched = make(opt)
    lrs = []
    for _ in range(EPOCHS):
        lrs.append(float(opt.param_groups[0]["lr"]))
        opt.step()
        sched.step()
    return lrs


def sched_case(case, name, config):
    S = torch.optim.lr_scheduler
    lrs = run_sched(lambda opt: getattr(S, name)(opt, **config))
    write(OPTIM_DIR, "sched_" + case, {
        "case": "sched_" + case, "scheduler": name, "config": jsonable(config),
        "base_lr": BASE_LR, "lrs": lrs,
    })


def seq_case(case, warmup, then_name, then_cfg, milestone):
    S = torch.optim.lr_scheduler

    def make(opt):
        s1 = S.LinearLR(opt, **warmup)
        s2 = getattr(S, then_name)(opt, **then_cfg)
        return S.SequentialLR(opt, schedulers=[s1, s2], milestones=[milestone])

    lrs = run_sched(make)
    then = {"scheduler": then_name}
    then.update(then_cfg)
    write(OPTIM_DIR, "sched_" + case, {
        "case": "sched_" + case, "scheduler": "SequentialLR",
        "config": jsonable({"warmup": warmup, "then": then, "milestone": milestone}),
        "base_lr": BASE_LR, "lrs": lrs,
    })


def gen_sched():
    sched_case("steplr", "StepLR", {"step_size": 3, "gamma": 0.5})
    sched_case("multisteplr", "MultiStepLR", {"milestones": [2, 5, 8], "gamma": 0.1})
    sched_case("cosine", "CosineAnnealingLR", {"T_max": 10, "eta_min": 0.001})
    sched_case("linearlr", "LinearLR", {"start_factor": 0.1, "total_iters": 4})
    seq_case("warmup_cosine", {"start_factor": 0.1, "total_iters": 4},
             "CosineAnnealingLR", {"T_max": 8}, 4)
    seq_case("warmup_steplr", {"start_factor": 0.1, "total_iters": 4},
             "StepLR", {"step_size": 3, "gamma": 0.5}, 4)


def main():
    import warnings
    warnings.simplefilter("ignore")
    gen_layers()
    gen_optim()
    clip_case("clip_grad_norm", 2.0)         # total norm > 1 -> clipped
    clip_case("clip_grad_norm_noclip", 0.1)  # total norm < 1 -> unchanged (coef clamped to 1)
    gen_sched()
    total = 0
    for path in WRITTEN:
        total += os.path.getsize(path)
    print("torch %s: wrote %d files, %d bytes" % (torch.__version__, len(WRITTEN), total),
          file=sys.stderr)


if __name__ == "__main__":
    main()
