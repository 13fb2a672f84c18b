#!/usr/bin/python3
"""Independent PyTorch reference for foldnorm's GPT-2 trainer.

Builds (or loads) a GPT-2 in llm.c's parameter layout, runs it in one of three
norm modes, and writes two files that the C tests check against:

  --model  the model file (magic 20240326, docs/formats.md) holding the INITIAL
           weights, with the norm mode in header slot 8;
  --state  the debug-state file (magic 20240327): the batch x, y, the initial
           logits and loss, every parameter gradient at the initial weights,
           and the losses of N AdamW steps on that same batch.

Norm modes (eps = 1e-5 everywhere):
  ln    every norm is LayerNorm                 y = g (x - mu) / sqrt(var + eps) + b
  rms   every norm is RMSNorm with a bias        y = g x / sqrt(mean(x^2) + eps) + b
  cbwc  RMSNorm, plus centred effective weights on the layers that feed the
        residual stream: the token-embedding read (rows of wte centred over C;
        the tied LM head still reads the raw wte), wpe (rows centred over C),
        and every attention / MLP output projection (each input column centred
        over the outputs, bias centred).  The centring happens inside the
        forward, so autograd yields the centred gradient dW = P dV.
  prms  every norm is partial RMSNorm (Zhang and Sennrich 2019): the RMS of the
        first k = ceil(p C) features scales all C, p = --prms-share (slot 8
        holds 4 + 256 * p * 2^16)   y = g x / sqrt(mean(x[:k]^2) + eps) + b
  ln and cbwc are the same function of the stored weights (docs/math.md).

--resid-dropout P adds train-mode residual dropout (Hugging Face GPT-2's
resid_pdrop) on the attention and MLP branch outputs, with the masks of
llmc/kernels/dropout.c redone here from its hash (docs/formats.md): forward k of the
run (k = 0 for the initial state) uses draw k.  With it ln and cbwc are no
longer the same function (docs/math.md section 6).

--drop-path RATE adds train-mode stochastic depth (dev/reference/drop_path.py,
Swin's linear rule): each sample's attention and MLP branch of layer l is
scaled by one number, drawn once after the weights and used by every forward;
--drop-path-scales writes those (B, L, 2) scales for test_gpt2 -dp. It keeps
ln and cbwc the same function.

Only the standard library, numpy and torch are used; everything is fp32.
Run with Debian's interpreter:  /usr/bin/python3 dev/reference/gpt2.py -h
"""

import argparse
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import drop_path  # noqa: E402

MODEL_MAGIC = 20240326
MODEL_VERSION = 3
STATE_MAGIC = 20240327
STATE_VERSION = 2
HEADER_INTS = 256
NORM_EPS = 1e-5

MODES = ("ln", "rms", "cbwc", "prms")  # header slot 8: 0, 1, 2, 4 (+ the share)
FILE_VALUE = {"ln": 0, "rms": 1, "cbwc": 2, "prms": 4}
SHARE_UNITS = 65536                    # prms's share in slot 8's upper bits, units of 2^-16

# Parameter names in the model file's order (llm.c's order).
PARAM_NAMES = ("wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw",
               "attprojb", "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb",
               "lnfw", "lnfb")
# Matrices that get weight decay (as in llm.c's train_gpt2.cu).
DECAYED = ("wte", "wpe", "qkvw", "attprojw", "fcw", "fcprojw")
NORM_GAINS = ("ln1w", "ln2w", "lnfw")
NORM_BIASES = ("ln1b", "ln2b", "lnfb")
LINEAR_BIASES = ("qkvb", "attprojb", "fcb", "fcprojb")
RESIDUAL_PROJECTIONS = ("attprojw", "fcprojw")   # N(0, 0.02/sqrt(2L)) at init


def param_shapes(Vp, maxT, L, C):
    """Shapes of the parameters, in file order."""
    return {
        "wte": (Vp, C), "wpe": (maxT, C),
        "ln1w": (L, C), "ln1b": (L, C),
        "qkvw": (L, 3 * C, C), "qkvb": (L, 3 * C),
        "attprojw": (L, C, C), "attprojb": (L, C),
        "ln2w": (L, C), "ln2b": (L, C),
        "fcw": (L, 4 * C, C), "fcb": (L, 4 * C),
        "fcprojw": (L, C, 4 * C), "fcprojb": (L, C),
        "lnfw": (C,), "lnfb": (C,),
    }


# ----------------------------------------------------------------------------
# norms, centred weights, attention

def layernorm(x, g, b):
    mu = x.mean(dim=-1, keepdim=True)
    xc = x - mu
    var = (xc * xc).mean(dim=-1, keepdim=True)          # biased variance
    return xc * torch.rsqrt(var + NORM_EPS) * g + b


def rmsnorm(x, g, b):
    ms = (x * x).mean(dim=-1, keepdim=True)
    return x * torch.rsqrt(ms + NORM_EPS) * g + b


def prmsnorm(x, g, b, share):
    C = x.shape[-1]
    k = max(1, min(C, math.ceil(share * C)))
    ms = (x[..., :k] * x[..., :k]).mean(dim=-1, keepdim=True)
    return x * torch.rsqrt(ms + NORM_EPS) * g + b


def centre_rows(t):
    """Each row (last axis) minus its mean: used for embedding tables,
    whose rows are the vectors added to the residual stream."""
    return t - t.mean(dim=-1, keepdim=True)


def centre_linear(w, b):
    """CBWC effective weights of a linear layer y = x W^T + b, W (out, in):
    each input column of W centred over the output dimension, and the bias
    centred, so that the outputs of the layer sum to zero for every input."""
    v = w - w.mean(dim=0, keepdim=True)
    bt = b - b.mean()
    return v, bt


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi)
                                       * (x + 0.044715 * x * x * x)))


def causal_self_attention(qkv, NH):
    """qkv (B, T, 3C) -> (B, T, C): q, k, v in that order, NH heads."""
    B, T, C3 = qkv.shape
    C = C3 // 3
    hs = C // NH
    q, k, v = qkv.split(C, dim=2)
    q = q.view(B, T, NH, hs).transpose(1, 2)              # (B, NH, T, hs)
    k = k.view(B, T, NH, hs).transpose(1, 2)
    v = v.view(B, T, NH, hs).transpose(1, 2)
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))   # (B, NH, T, T)
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    scores = scores.masked_fill(future, float("-inf"))
    att = F.softmax(scores, dim=-1)
    out = att @ v                                          # (B, NH, T, hs)
    return out.transpose(1, 2).contiguous().view(B, T, C)


# ----------------------------------------------------------------------------
# the model

MASK64 = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15


def mix64(z):
    """splitmix64's finaliser on a numpy uint64 array (wrapping arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def dropout_scale(p, seed, stream, n):
    """llmc/kernels/dropout.c's mask times 1/(1-p) for n elements of mask stream `stream`:
    u_i = top 24 bits of mix64(key + G (i+1)) / 2^24, key = mix64(seed + G (stream+1)),
    element i kept iff u_i >= p."""
    key = mix64(np.array([(seed + GOLDEN_GAMMA * (stream + 1)) & MASK64], dtype=np.uint64))
    i = np.arange(1, n + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        h = mix64(key + np.uint64(GOLDEN_GAMMA) * i)
    u = (h >> np.uint64(40)).astype(np.float64) / 16777216.0
    p32 = np.float32(p)
    scale = np.float32(1.0) / (np.float32(1.0) - p32)
    return torch.from_numpy(np.where(u >= float(p32), scale, np.float32(0.0)).astype(np.float32))


class GPT(nn.Module):
    def __init__(self, V, Vp, maxT, L, NH, C, mode, prms_share=0.0625):
        super().__init__()
        self.V, self.Vp, self.maxT, self.L, self.NH, self.C = V, Vp, maxT, L, NH, C
        self.mode = mode
        self.prms_share = prms_share  # read_model's cfg carries a prms file's own
        self.resid_dropout, self.dropout_seed, self.draw = 0.0, 0, 0
        self.drop_scales = None  # drop-path: (B, L, 2), or None
        for name, shape in param_shapes(Vp, maxT, L, C).items():
            setattr(self, name, nn.Parameter(torch.zeros(shape, dtype=torch.float32)))

    def params(self):
        """(name, parameter) in the model file's order."""
        return [(n, getattr(self, n)) for n in PARAM_NAMES]

    def norm(self, x, g, b):
        if self.mode == "prms":
            return prmsnorm(x, g, b, self.prms_share)
        return layernorm(x, g, b) if self.mode == "ln" else rmsnorm(x, g, b)

    def linear(self, x, w, b):
        return x @ w.t() + b

    def residual_projection(self, x, w, b):
        """Output projection of a branch; centred in cbwc mode."""
        if self.mode == "cbwc":
            w, b = centre_linear(w, b)
        return self.linear(x, w, b)

    def drop(self, branch, l, which):
        """Residual dropout or drop-path of branch `which` (0 attention, 1 MLP) of layer l."""
        if self.drop_scales is not None:  # one scale per sample
            return branch * self.drop_scales[:, l, which].view(-1, 1, 1)
        if self.resid_dropout == 0.0:
            return branch
        stream = (self.draw * self.L + l) * 2 + which
        mask = dropout_scale(self.resid_dropout, self.dropout_seed, stream, branch.numel())
        return branch * mask.view(branch.shape)

    def embed(self, x):
        B, T = x.shape
        tok = self.wte[x]                                  # (B, T, C), proxy rows
        pos = self.wpe[:T]                                 # (T, C)
        if self.mode == "cbwc":
            # Centring a gathered row equals gathering the centred row, so
            # this is Vwte[x] with Vwte = wte - wte.mean(dim=1, keepdim=True).
            tok = centre_rows(tok)
            pos = centre_rows(pos)
        return tok + pos

    def forward(self, x, y):
        h = self.embed(x)
        for l in range(self.L):
            a = self.norm(h, self.ln1w[l], self.ln1b[l])
            qkv = self.linear(a, self.qkvw[l], self.qkvb[l])
            att = causal_self_attention(qkv, self.NH)
            h = h + self.drop(self.residual_projection(att, self.attprojw[l], self.attprojb[l]),
                              l, 0)
            m = self.norm(h, self.ln2w[l], self.ln2b[l])
            m = gelu_tanh(self.linear(m, self.fcw[l], self.fcb[l]))
            h = h + self.drop(self.residual_projection(m, self.fcprojw[l], self.fcprojb[l]), l, 1)
        h = self.norm(h, self.lnfw, self.lnfb)
        logits = h @ self.wte[:self.V].t()                # tied head, raw proxy wte
        # target -1 = masked out (SFT prompt tokens): mean over the others
        loss = F.cross_entropy(logits.view(-1, self.V), y.reshape(-1), ignore_index=-1)
        return logits, loss

    @torch.no_grad()
    def init_weights(self, scheme, gen):
        """Draw every parameter in file order from `gen`."""
        std = 0.02
        for name, p in self.params():
            shape = p.shape
            if name in NORM_GAINS:
                if scheme == "test":
                    p.copy_(1.0 + 0.1 * torch.randn(shape, generator=gen))
                else:
                    p.fill_(1.0)
            elif name in NORM_BIASES:
                if scheme == "test":
                    p.copy_(0.05 * torch.randn(shape, generator=gen))
                else:
                    p.zero_()
            elif name in LINEAR_BIASES:
                if scheme == "test":
                    p.copy_(std * torch.randn(shape, generator=gen))
                else:
                    p.zero_()
            else:
                s = std / math.sqrt(2 * self.L) if name in RESIDUAL_PROJECTIONS else std
                p.copy_(s * torch.randn(shape, generator=gen))
        self.wte[self.V:].zero_()                          # padded vocab rows


# ----------------------------------------------------------------------------
# files

def header(values):
    h = np.zeros(HEADER_INTS, dtype=np.int32)
    h[:len(values)] = values
    return h


def f32_bits(v):
    """The int32 whose bits are the fp32 value v."""
    return int(np.array([v], dtype=np.float32).view(np.int32)[0])


def mode_file_value(model):
    if model.mode == "prms":
        return FILE_VALUE["prms"] + 256 * round(model.prms_share * SHARE_UNITS)
    return FILE_VALUE[model.mode]


def write_model(path, model):
    h = header([MODEL_MAGIC, MODEL_VERSION, model.maxT, model.V, model.L,
                model.NH, model.C, model.Vp, mode_file_value(model)])
    with open(path, "wb") as f:
        f.write(h.tobytes())
        for _, p in model.params():
            f.write(p.detach().cpu().numpy().astype("<f4").tobytes())


def read_model(path):
    """Returns (config dict, mode name, {name: float32 array})."""
    def fail(msg):
        sys.exit(f"gpt2.py: {path}: {msg}")
    try:
        data = open(path, "rb").read()
    except OSError as e:
        fail(f"cannot open: {e.strerror}")
    if len(data) < 4 * HEADER_INTS:
        fail("file shorter than the 1024-byte header")
    h = np.frombuffer(data[:4 * HEADER_INTS], dtype="<i4")
    if h[0] != MODEL_MAGIC:
        fail(f"bad magic {h[0]} (want {MODEL_MAGIC})")
    if h[1] != MODEL_VERSION:
        fail(f"version {h[1]} not supported (only {MODEL_VERSION}, fp32)")
    maxT, V, L, NH, C, Vp, mode = (int(v) for v in h[2:9])
    if min(maxT, V, L, NH, C, Vp) <= 0:
        fail("non-positive dimension in header")
    if C % NH != 0:
        fail(f"C={C} not divisible by NH={NH}")
    if V > Vp:
        fail(f"V={V} > Vp={Vp}")
    share = 0.0625
    if mode & 255 == FILE_VALUE["prms"] and 1 <= mode >> 8 <= SHARE_UNITS:
        mode, share = FILE_VALUE["prms"], (mode >> 8) / SHARE_UNITS
    if mode not in FILE_VALUE.values():
        fail(f"norm mode {mode} not one of {sorted(FILE_VALUE.values())}")
    shapes = param_shapes(Vp, maxT, L, C)
    n = sum(int(np.prod(s)) for s in shapes.values())
    if len(data) != 4 * HEADER_INTS + 4 * n:
        fail(f"size {len(data)} != {4 * HEADER_INTS + 4 * n} (header + {n} fp32)")
    flat = np.frombuffer(data, dtype="<f4", offset=4 * HEADER_INTS)
    if not np.all(np.isfinite(flat)):
        fail("non-finite parameter")
    params, off = {}, 0
    for name in PARAM_NAMES:
        k = int(np.prod(shapes[name]))
        params[name] = flat[off:off + k].reshape(shapes[name]).astype(np.float32)
        off += k
    cfg = dict(V=V, Vp=Vp, maxT=maxT, L=L, NH=NH, C=C)
    cfg["prms_share"] = share
    return cfg, {v: k for k, v in FILE_VALUE.items()}[mode], params


def write_state(path, x, y, logits, loss, grads, losses, hp):
    h = header([STATE_MAGIC, STATE_VERSION, x.shape[0], x.shape[1], len(losses),
                f32_bits(hp["lr"]), f32_bits(hp["beta1"]), f32_bits(hp["beta2"]),
                f32_bits(hp["eps"]), f32_bits(hp["wd"]), f32_bits(hp["clip"])])
    with open(path, "wb") as f:
        f.write(h.tobytes())
        f.write(x.numpy().astype("<i4").tobytes())
        f.write(y.numpy().astype("<i4").tobytes())
        f.write(logits.astype("<f4").tobytes())
        f.write(np.array([loss], dtype="<f4").tobytes())
        for g in grads:                                    # file order; wte is (Vp, C)
            f.write(g.astype("<f4").tobytes())
        f.write(np.array(losses, dtype="<f4").tobytes())


# ----------------------------------------------------------------------------
# command line

SMALL = dict(V=500, Vp=512, maxT=32, L=2, NH=4, C=64)


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Independent PyTorch GPT-2 reference for foldnorm: writes a "
                    "model file (initial weights) and a debug-state file (batch, "
                    "logits, loss, gradients, and the losses of N AdamW steps).")
    p.add_argument("--mode", choices=MODES,
                   help="norm mode; required unless --load (then it defaults to the file's mode)")
    p.add_argument("--prms-share", type=float, default=0.0625,
                   help="prms: share of the features the RMS is taken over (default 0.0625; "
                        "--load: the file's)")
    g = p.add_argument_group("config (ignored with --load, which takes it from the file; "
                             "given values must then agree with it)")
    for k, v in SMALL.items():
        g.add_argument(f"--{k}", type=int, default=None, help=f"default {v}")
    p.add_argument("--B", type=int, default=4, help="batch size (default 4)")
    p.add_argument("--T", type=int, default=32, help="sequence length (default 32)")
    p.add_argument("--seed", type=int, default=0, help="drives init and the batch (default 0)")
    p.add_argument("--init", choices=("test", "gpt2"), default="test",
                   help="test: random biases and norm affines too (default); gpt2: llm.c's init")
    p.add_argument("--load", metavar="FILE.bin",
                   help="take the weights and config from this model file (--init is then unused)")
    p.add_argument("--model", metavar="OUT.bin", help="write the initial weights here")
    p.add_argument("--state", metavar="OUT.bin", help="write the debug state here")
    p.add_argument("--steps", type=int, default=0,
                   help="N: number of losses recorded, loss k after k AdamW steps (default 0)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.95)
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--wd", type=float, default=0.1, help="weight decay on the matrices")
    p.add_argument("--clip", type=float, default=1.0, help="global grad-norm clip, 0 = none")
    p.add_argument("--resid-dropout", type=float, default=0.0, metavar="P",
                   help="train-mode residual dropout with llmc/kernels/dropout.c's masks (default 0)")
    p.add_argument("--dropout-seed", type=int, default=0,
                   help="the masks' seed (train_gpt2 -sd, test_gpt2 -sd) (default 0)")
    p.add_argument("--drop-path", type=float, default=0.0, metavar="RATE",
                   help="train-mode stochastic depth, the scales drawn once (default 0)")
    p.add_argument("--drop-path-scales", metavar="FILE",
                   help="write the drop-path scales (B, L, 2) here (for test_gpt2 -dp)")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    p.add_argument("--mask", action="store_true",
                   help="mask a random prefix of each row's targets (-1), as SFT masks the "
                        "prompt: the loss is the mean over the other targets")
    a = p.parse_args(argv)

    if a.load is None:
        if a.mode is None:
            p.error("--mode is required unless --load is given")
        for k, v in SMALL.items():
            if getattr(a, k) is None:
                setattr(a, k, v)
    if a.B < 1 or a.T < 1:
        p.error("B and T must be >= 1")
    if a.steps < 0:
        p.error("--steps must be >= 0")
    if a.clip < 0 or a.wd < 0 or a.lr < 0 or a.eps <= 0:
        p.error("need lr >= 0, eps > 0, wd >= 0, clip >= 0")
    if not (0 <= a.beta1 < 1 and 0 <= a.beta2 < 1):
        p.error("betas must be in [0, 1)")
    if not 0.0 <= a.resid_dropout < 1.0:
        p.error("--resid-dropout must be in [0, 1)")
    if not 0.0 <= a.drop_path < 1.0:
        p.error("--drop-path must be in [0, 1)")
    if a.drop_path > 0 and a.resid_dropout > 0:
        p.error("--drop-path and --resid-dropout: choose one")
    if not 0 <= a.dropout_seed < 2 ** 64:
        p.error("--dropout-seed must be in [0, 2^64)")
    if a.threads < 1:
        p.error("--threads must be >= 1")
    return p, a


def check_config(p, cfg, T):
    if min(cfg.values()) <= 0:
        p.error(f"every dimension must be positive: {cfg}")
    if cfg["C"] % cfg["NH"] != 0:
        p.error(f"C={cfg['C']} is not divisible by NH={cfg['NH']}")
    if cfg["V"] > cfg["Vp"]:
        p.error(f"V={cfg['V']} > Vp={cfg['Vp']}")
    if T > cfg["maxT"]:
        p.error(f"T={T} > maxT={cfg['maxT']}")


def main(argv=None):
    p, a = parse_args(argv)
    torch.set_num_threads(a.threads)
    torch.use_deterministic_algorithms(True)
    gen = torch.Generator().manual_seed(a.seed)

    if a.load is not None:
        cfg, file_mode, weights = read_model(a.load)
        a.prms_share = cfg.pop("prms_share")
        for k in SMALL:
            given = getattr(a, k)
            if given is not None and given != cfg[k]:
                p.error(f"--{k} {given} disagrees with {a.load} ({k}={cfg[k]})")
        mode = a.mode or file_mode
    else:
        cfg = {k: getattr(a, k) for k in SMALL}
        mode, weights = a.mode, None
    check_config(p, cfg, a.T)

    # The batch is drawn first, so a --load run with the same seed sees the
    # same batch as the run that wrote the loaded file.
    x = torch.randint(0, cfg["V"], (a.B, a.T), generator=gen)
    y = torch.randint(0, cfg["V"], (a.B, a.T), generator=gen)
    if a.mask:  # own generator, so the weights match an unmasked run's
        mgen = torch.Generator().manual_seed(a.seed + 1)
        for b in range(a.B):
            y[b, :int(torch.randint(0, a.T, (1,), generator=mgen))] = -1
    model = GPT(mode=mode, **cfg)
    model.prms_share = a.prms_share
    model.resid_dropout, model.dropout_seed = a.resid_dropout, a.dropout_seed
    if weights is not None:
        with torch.no_grad():
            for name, prm in model.params():
                prm.copy_(torch.from_numpy(weights[name]))
    else:
        model.init_weights(a.init, gen)
    if a.drop_path > 0:
        model.drop_scales = drop_path.draw(a.B, cfg["L"], a.drop_path, gen)
    if a.drop_path_scales:
        ones = torch.ones(a.B, cfg["L"], 2)
        drop_path.write(a.drop_path_scales,
                        model.drop_scales if model.drop_scales is not None else ones)

    if a.model:
        write_model(a.model, model)                        # initial weights

    named = model.params()
    groups = [
        {"params": [q for n, q in named if n in DECAYED], "weight_decay": a.wd},
        {"params": [q for n, q in named if n not in DECAYED], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=a.lr, betas=(a.beta1, a.beta2), eps=a.eps)
    all_params = [q for _, q in named]

    def forward_backward(draw):
        model.draw = draw
        opt.zero_grad(set_to_none=True)
        logits, loss = model(x, y)
        loss.backward()
        return logits, loss

    logits, loss = forward_backward(0)
    logits0 = logits.detach().numpy().copy()
    loss0 = loss.item()
    grads0 = [q.grad.detach().numpy().copy() for q in all_params]   # before clipping

    # losses[k] is measured after k updates; the update after the last
    # recorded loss would change nothing that is written, so it is skipped.
    losses = []
    for k in range(a.steps):
        if k > 0:
            _, loss = forward_backward(k)
        losses.append(loss.item())
        print(f"step {k} loss {loss.item():.6f}", flush=True)
        if k < a.steps - 1:
            if a.clip > 0:
                torch.nn.utils.clip_grad_norm_(all_params, a.clip)
            opt.step()
    if a.steps == 0:
        print(f"initial loss {loss0:.6f}")

    if a.state:
        hp = dict(lr=a.lr, beta1=a.beta1, beta2=a.beta2, eps=a.eps, wd=a.wd, clip=a.clip)
        write_state(a.state, x, y, logits0, loss0, grads0, losses, hp)
    written = [f"model {a.model} ({os.path.getsize(a.model)} B)" if a.model else None,
               f"state {a.state} ({os.path.getsize(a.state)} B)" if a.state else None]
    written = [w for w in written if w] or ["nothing (no --model / --state)"]
    print(f"mode {mode} V {cfg['V']} Vp {cfg['Vp']} maxT {cfg['maxT']} L {cfg['L']} "
          f"NH {cfg['NH']} C {cfg['C']} B {a.B} T {a.T} seed {a.seed} loss0 {loss0:.6f} "
          f"steps {a.steps}; wrote " + ", ".join(written))


if __name__ == "__main__":
    main()
