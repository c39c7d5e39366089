#!/usr/bin/python3
"""PyTorch twins of Hora's zoo models, for the `zoo` group of `make bench`.

Each twin is the architecture Hora builds for a shipped config (models/*.go,
through train.NewModel), written with torch.nn so that its state dict has
the same names and shapes as Hora's (layers.StateDict): the same layers in
the same order, widths, kernels, strides, padding, biases, BatchNorm,
activations, pooling and heads. The settings come from the same YAML files
(configs/*.yaml, read with python3-yaml, a dependency of python3-torch),
with train.DefaultConfig's values for the keys a file leaves out, and the
optimizer is the one the config names with its hyper-parameters.

Usage (bench/pytorch_bench.py imports it for the timings):

  zoo_twins.py describe       one JSON line per zoo config: the twin's
                              batch, optimizer, parameter count and
                              parameters (name and shape)
  zoo_twins.py check FILE...  for each JSON file written by bench/hora's
                              TestZooTwins (a config, Hora's state dict and
                              an input batch): loads the weights into the
                              twin (strictly: every name and shape) and
                              prints the twin's logits in training mode

bench/hora's TestZooTwins runs both and fails when a twin's parameters,
settings or outputs differ from Hora's.
"""
import json
import os
import re
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import yaml

CONFIG_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs")

# The zoo configs, in the order the zoo group measures them (bench/hora's
# zooConfigs).
ZOO = [
    "fashion-mnist-lenet5.yaml",
    "fashion-mnist-resnet.yaml",
    "fashion-mnist-resnet20.yaml",
    "fashion-mnist-mobilenet.yaml",
    "fashion-mnist-transformer.yaml",
    "fortunes-charlm.yaml",
]

# The character-level language model's vocabulary size: the distinct
# characters of configs/fortunes-charlm.yaml's text (Debian 12's fortunes),
# as benchjob.CharLMVocab gives Hora.
CHARLM_VOCAB = 99

# Fashion-MNIST: 1×28×28 images, 10 classes (benchjob.Input).
IMAGE = (1, 28, 28)
CLASSES = 10

# train.DefaultConfig's values of the keys the twins read.
DEFAULTS = {
    "seed": 1,
    "model": {"blocks": [2, 2, 2], "widths": [16, 32, 64], "stem": "cifar", "dim": 128, "heads": 4,
              "layers": 4, "ff": 512, "patch_size": 7, "context": 128, "dropout": 0.0},
    "optimizer": {"momentum": 0.0, "dampening": 0.0, "nesterov": False, "weight_decay": 0.0,
                  "betas": [0.9, 0.999], "eps": 1e-8, "amsgrad": False, "clip_norm": 0.0},
    "train": {"batch_size": 128},
}


class YAMLLoader(yaml.SafeLoader):
    """PyYAML's safe loader reading 1e-3 as a number, as Go's YAML (1.2)
    does (YAML 1.1 needs a dot: 1.0e-3)."""


YAMLLoader.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9]+[eE][-+]?[0-9]+$"),
                                 list("-+0123456789"))


def load_config(file):
    """The config's sections the twins use, defaults filled in."""
    with open(os.path.join(CONFIG_DIR, file)) as f:
        raw = yaml.load(f, Loader=YAMLLoader) or {}
    cfg = {"file": file, "seed": raw.get("seed", DEFAULTS["seed"])}
    for section in ("model", "optimizer", "train"):
        cfg[section] = {**DEFAULTS[section], **(raw.get(section) or {})}
    return cfg


# ---- the models (models/*.go) ----

class Net(nn.Module):
    """models.Net: a feature extractor and a classifier head."""

    def __init__(self, features, classifier):
        super().__init__()
        self.features = features
        self.classifier = classifier

    def forward(self, x):
        return self.classifier(self.features(x))


def lenet5(shape=IMAGE, classes=CLASSES):
    """models.NewLeNet5For: conv 5×5 pad 2, ReLU, max-pool 2, conv 5×5,
    ReLU, max-pool 2, linear 400→120→84→classes with ReLUs (biases
    everywhere)."""
    c, h, w = shape
    h, w = (h // 2 - 4) // 2, (w // 2 - 4) // 2
    return Net(
        nn.Sequential(nn.Conv2d(c, 6, 5, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(2),
                      nn.Conv2d(6, 16, 5), nn.ReLU(inplace=True), nn.MaxPool2d(2)),
        nn.Sequential(nn.Flatten(), nn.Linear(16 * h * w, 120), nn.ReLU(inplace=True),
                      nn.Linear(120, 84), nn.ReLU(inplace=True), nn.Linear(84, classes)))


def conv(cin, cout, k, stride=1, pad=0, groups=1):
    """models.newConv: a bias-free convolution, weight from N(0, 2/fan_out)."""
    c = nn.Conv2d(cin, cout, k, stride=stride, padding=pad, groups=groups, bias=False)
    nn.init.kaiming_normal_(c.weight, mode="fan_out", nonlinearity="relu")
    return c


class BasicBlock(nn.Module):
    """models' basicBlock (torchvision's BasicBlock): relu(bn2(conv2(relu(
    bn1(conv1(x))))) + shortcut(x)), the shortcut a strided 1×1 convolution
    and BatchNorm ("downsample") where the shape changes."""

    def __init__(self, cin, width, stride):
        super().__init__()
        self.conv1 = conv(cin, width, 3, stride, 1)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = conv(width, width, 3, 1, 1)
        self.bn2 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or cin != width:
            self.downsample = nn.Sequential(conv(cin, width, 1, stride), nn.BatchNorm2d(width))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    """models.ResNet with basic blocks: a stem (cifar: 3×3 stride-1
    convolution; imagenet: 7×7 stride 2 and a 3×3 stride-2 max-pool),
    BatchNorm, ReLU, stages of blocks (the first block of every stage but
    the first has stride 2), global average pooling and fc."""

    def __init__(self, blocks, widths, stem, cin=IMAGE[0], classes=CLASSES):
        super().__init__()
        if stem == "imagenet":
            self.conv1, self.maxpool = conv(cin, widths[0], 7, 2, 3), nn.MaxPool2d(3, 2, 1)
        else:
            self.conv1, self.maxpool = conv(cin, widths[0], 3, 1, 1), None
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        cur = widths[0]
        self.stages = []
        for i, (n, width) in enumerate(zip(blocks, widths)):
            stage = nn.Sequential(*[BasicBlock(cur if j == 0 else width, width, 2 if i > 0 and j == 0 else 1)
                                    for j in range(n)])
            cur = width
            self.add_module(f"layer{i + 1}", stage)
            self.stages.append(stage)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cur, classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        if self.maxpool is not None:
            x = self.maxpool(x)
        for s in self.stages:
            x = s(x)
        return self.fc(torch.flatten(self.avgpool(x), 1))


def mobilenet(cin=IMAGE[0], classes=CLASSES, widths=(32, 64, 128, 128, 256), strides=(2, 1, 2, 1, 1)):
    """models.NewMobileNet(models.MobileNetSmallConfig): a 3×3 stem
    (BatchNorm, ReLU6), depthwise-separable blocks (3×3 depthwise, BN,
    ReLU6, 1×1 pointwise, BN, ReLU6), global average pooling, Linear."""
    features = [nn.Sequential(conv(cin, widths[0], 3, strides[0], 1), nn.BatchNorm2d(widths[0]), nn.ReLU6(inplace=True))]
    for i in range(1, len(widths)):
        c, w = widths[i - 1], widths[i]
        features.append(nn.Sequential(
            conv(c, c, 3, strides[i], 1, groups=c), nn.BatchNorm2d(c), nn.ReLU6(inplace=True),
            conv(c, w, 1), nn.BatchNorm2d(w), nn.ReLU6(inplace=True)))
    fc = nn.Linear(widths[-1], classes)
    nn.init.normal_(fc.weight, 0, 0.01)
    nn.init.zeros_(fc.bias)
    return Net(nn.Sequential(*features), nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), fc))


def encoder_layer(dim, heads, ff, dropout):
    """layers.TransformerEncoderLayer with NormFirst and GELU (exact):
    x + attn(norm1(x)), then x + linear2(gelu(linear1(norm2(x))))."""
    return nn.TransformerEncoderLayer(dim, heads, ff, dropout, activation="gelu", batch_first=True, norm_first=True)


class TransformerClassifier(nn.Module):
    """models.TransformerClassifier: patches (C, row, column order)
    embedded by a Linear layer, plus a learned positional embedding,
    pre-norm GELU encoder blocks, a final LayerNorm, the mean of the
    tokens and a Linear head."""

    def __init__(self, m, shape=IMAGE, classes=CLASSES):
        super().__init__()
        c, h, w = shape
        self.patch = p = m["patch_size"]
        if p > 0:
            self.in_features, self.seq_len = c * p * p, (h // p) * (w // p)
        else:  # one token per image row
            self.in_features, self.seq_len = c * w, h
        self.embed = nn.Linear(self.in_features, m["dim"])
        self.pos_emb = nn.Parameter(torch.randn(1, self.seq_len, m["dim"]) * 0.02)
        self.drop = nn.Dropout(m["dropout"])
        self.layers = nn.ModuleList([encoder_layer(m["dim"], m["heads"], m["ff"], m["dropout"]) for _ in range(m["layers"])])
        self.norm = nn.LayerNorm(m["dim"])
        self.head = nn.Linear(m["dim"], classes)

    def tokens(self, x):
        n, c, h, w = x.shape
        p = self.patch
        if p > 0:
            x = x.reshape(n, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5)
            return x.reshape(n, self.seq_len, self.in_features)
        return x.permute(0, 2, 1, 3).reshape(n, h, c * w)

    def forward(self, x):
        h = self.drop(self.embed(self.tokens(x)) + self.pos_emb)
        for b in self.layers:
            h = b(h)
        return self.head(self.norm(h).mean(1))


class CharLM(nn.Module):
    """models.CharLM: token and positional embeddings (not tied to the
    head), pre-norm GELU blocks with causal self-attention (a float mask,
    -inf above the diagonal), a final LayerNorm and a Linear head to one
    logit per character."""

    def __init__(self, m, vocab=CHARLM_VOCAB):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, m["dim"])
        self.pos_emb = nn.Embedding(m["context"], m["dim"])
        nn.init.normal_(self.tok_emb.weight, 0, 0.02)
        nn.init.normal_(self.pos_emb.weight, 0, 0.02)
        self.drop = nn.Dropout(m["dropout"])
        self.blocks = nn.ModuleList([encoder_layer(m["dim"], m["heads"], m["ff"], m["dropout"]) for _ in range(m["layers"])])
        self.ln_f = nn.LayerNorm(m["dim"])
        self.head = nn.Linear(m["dim"], vocab)
        self.mask = None  # the last causal mask, reused while T is the same

    def forward(self, ids):
        t = ids.shape[1]
        if self.mask is None or self.mask.shape[0] != t:
            self.mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        h = self.drop(self.tok_emb(ids) + self.pos_emb.weight[:t])
        for b in self.blocks:
            h = b(h, src_mask=self.mask)
        return self.head(self.ln_f(h))


# ---- the training job ----

def short_name(cfg):
    """The name of the zoo workload: the config's model.name."""
    return cfg["model"]["name"]


def build_model(cfg):
    m = cfg["model"]
    name = m["name"]
    if name == "lenet5":
        return lenet5()
    if name == "resnet":
        return ResNet(m["blocks"], m["widths"], m["stem"])
    if name == "resnet20":  # models.ResNet20Config, the config's stem
        return ResNet([3, 3, 3], [16, 32, 64], m["stem"])
    if name == "mobilenet":
        return mobilenet()
    if name == "transformer":
        return TransformerClassifier(m)
    if name == "charlm":
        return CharLM(m)
    raise ValueError(f"{cfg['file']}: model {name!r} has no PyTorch twin")


def optimizer_settings(cfg):
    """The optimizer's name and hyper-parameters, as the twin uses them."""
    o = cfg["optimizer"]
    name = o["name"]
    if name == "sgd":
        keys = ("lr", "momentum", "dampening", "nesterov", "weight_decay")
    elif name in ("adam", "adamw"):
        keys = ("lr", "betas", "eps", "weight_decay", "amsgrad")
    else:
        raise ValueError(f"{cfg['file']}: optimizer {name!r} has no PyTorch twin")
    s = {k: o[k] for k in keys}
    if "betas" in s:
        s["betas"] = list(s["betas"])
    return {"name": name, **s, "clip_norm": o["clip_norm"]}


def build_optimizer(cfg, params):
    s = dict(optimizer_settings(cfg))
    name = s.pop("name")
    s.pop("clip_norm")
    if "betas" in s:
        s["betas"] = tuple(s["betas"])
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[name]
    return cls(params, **s)


class Job:
    """A zoo config's twin, optimizer and fixed random batch, and its
    training step: forward, cross-entropy (a language model's over every
    position), backward, gradient clipping (optimizer.clip_norm), step."""

    def __init__(self, file, batch=None):
        self.cfg = cfg = load_config(file)
        self.name = short_name(cfg)
        torch.manual_seed(cfg["seed"])
        self.model = build_model(cfg)
        self.opt = build_optimizer(cfg, self.model.parameters())
        self.clip = cfg["optimizer"]["clip_norm"]
        self.batch = batch or cfg["train"]["batch_size"]
        g = torch.Generator().manual_seed(cfg["seed"])
        if self.name == "charlm":
            t = cfg["model"]["context"]
            windows = torch.randint(0, CHARLM_VOCAB, (self.batch, t + 1), generator=g)
            self.x, self.y = windows[:, :t].contiguous(), windows[:, 1:].contiguous()
        else:
            self.x = torch.randn(self.batch, *IMAGE, generator=g)
            self.y = torch.randint(0, CLASSES, (self.batch,), generator=g)

    def params(self):
        return sum(p.numel() for p in self.model.parameters())

    def loss(self, logits, y):
        if logits.dim() == 3:
            logits, y = logits.reshape(-1, logits.shape[-1]), y.reshape(-1)
        return F.cross_entropy(logits, y)

    def step(self):
        self.opt.zero_grad(set_to_none=True)
        loss = self.loss(self.model(self.x), self.y)
        loss.backward()
        if self.clip > 0:
            nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
        self.opt.step()
        return loss


# ---- the checks of bench/hora's TestZooTwins ----

def describe():
    for file in ZOO:
        j = Job(file)
        print(json.dumps({
            "config": file, "name": j.name, "batch": j.batch, "optimizer": optimizer_settings(j.cfg),
            "params": j.params(),
            "param_shapes": [[n, list(p.shape)] for n, p in j.model.named_parameters()],
        }), flush=True)


def check(path):
    """Loads Hora's weights (state dict, strictly) into the twin of the
    file's config and returns the twin's logits for its input, in
    training mode (batch statistics, as the step uses them)."""
    with open(path) as f:
        d = json.load(f)
    j = Job(d["config"])
    own = j.model.state_dict()
    sd = {}
    for name, t in d["state"].items():
        like = own.get(name)
        dtype = like.dtype if like is not None else torch.float32
        sd[name] = torch.tensor(t["data"], dtype=torch.float64).reshape(t["shape"] or []).to(dtype)  # a scalar's shape is null
    res = j.model.load_state_dict(sd, strict=False)
    x = torch.tensor(d["x"]["data"], dtype=torch.float64).reshape(d["x"]["shape"])
    x = x.long() if j.name == "charlm" else x.float()
    j.model.train()
    with torch.no_grad():
        out = j.model(x)
    return {"config": d["config"], "params": j.params(), "missing": res.missing_keys,
            "unexpected": res.unexpected_keys, "logits": {"shape": list(out.shape), "data": out.flatten().tolist()}}


def main(args):
    if args[:1] == ["describe"]:
        describe()
    elif args[:1] == ["check"] and len(args) > 1:
        for path in args[1:]:
            print(json.dumps(check(path)), flush=True)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
