#!/usr/bin/python3
"""Independent PyTorch reference for foldnorm's ViT (llmc/vision/vit.c).

Builds (or loads) a ViT in foldnorm's parameter layout, runs it in one of
three norm modes, and writes the files the C test (test_vit) checks against:

  --model  the vision model file (magic 20261129, docs/formats.md) with the
           INITIAL weights, the family, the norm mode and the config;
  --state  the vision debug state (magic 20261130): the images and labels,
           the initial logits and loss, every parameter gradient, and the
           losses of N AdamW steps on the same batch.

The model: patch embedding as a Conv2d(Cin, C, P, stride P), a cls token in
front, learned position embedding, L pre-norm blocks (bidirectional
multi-head attention, GELU-tanh MLP of width mlp*C), the final norm over all
tokens, a linear head on the cls token, cross-entropy with label smoothing.

Norm modes (eps 1e-5): ln = LayerNorm everywhere; rms = RMSNorm with a bias
everywhere; prms = partial RMSNorm everywhere (vision_files.prms_norm); cbwc = RMSNorm everywhere and every tensor that writes the
residual stream centred over C: the patch conv's weight centred over its
output channels (and its bias), the cls token and each position row, and
every attention / MLP output projection (weight columns and bias).
A folded file (--load, mode folded, from bin/fold) runs every norm as RMSNorm
over its weights as stored (they hold the centred tensors already).
"""

import argparse
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import drop_path  # noqa: E402
import param_groups  # noqa: E402
import vision_files as vf  # noqa: E402

EPS = 1e-5
NAMES = ("patchw", "patchb", "cls", "pos", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw",
         "attprojb", "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb",
         "headw", "headb")
DECAYED = ("patchw", "qkvw", "attprojw", "fcw", "fcprojw", "headw")


def shapes(cfg):
    S, Cin, P, K = cfg["image_size"], cfg["image_channels"], cfg["patch_size"], cfg["num_classes"]
    C, L, M = cfg["channels"], cfg["num_layers"], cfg["mlp_ratio"]
    T = (S // P) ** 2 + 1
    H = M * C
    return {"patchw": (C, Cin, P, P), "patchb": (C,), "cls": (C,), "pos": (T, C),
            "ln1w": (L, C), "ln1b": (L, C), "qkvw": (L, 3 * C, C), "qkvb": (L, 3 * C),
            "attprojw": (L, C, C), "attprojb": (L, C), "ln2w": (L, C), "ln2b": (L, C),
            "fcw": (L, H, C), "fcb": (L, H), "fcprojw": (L, C, H), "fcprojb": (L, C),
            "lnfw": (C,), "lnfb": (C,), "headw": (K, C), "headb": (K,)}


def norm(mode, x, g, b):
    if mode == "ln":
        return F.layer_norm(x, (x.shape[-1],), g, b, EPS)
    if mode == "prms":
        return vf.prms_norm(x, g, b, EPS)
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + EPS) * g + b


def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


def centred_out(w, b):
    """CBWC: weight centred over its output dimension (dim 0), bias centred."""
    return w - w.mean(0, keepdim=True), b - b.mean()


def attention(x, wqkv, bqkv, NH):
    B, T, C = x.shape
    qkv = F.linear(x, wqkv, bqkv)
    q, k, v = qkv.view(B, T, 3, NH, C // NH).permute(2, 0, 3, 1, 4)
    att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(C // NH), dim=-1)
    return (att @ v).transpose(1, 2).reshape(B, T, C)


def vit_forward(P, cfg, mode, images, labels, smoothing, drop=None):
    """drop: None or the drop-path scales (B, num_layers, 2) of the branches."""
    c = mode == "cbwc"
    pw, pb = centred_out(P["patchw"], P["patchb"]) if c else (P["patchw"], P["patchb"])
    x = F.conv2d(images, pw, pb, stride=cfg["patch_size"])       # (B, C, g, g)
    x = x.flatten(2).transpose(1, 2)                              # (B, Np, C)
    cls = P["cls"] - P["cls"].mean() if c else P["cls"]
    pos = P["pos"] - P["pos"].mean(-1, keepdim=True) if c else P["pos"]
    x = torch.cat([cls.expand(x.shape[0], 1, -1), x], dim=1) + pos
    for l in range(cfg["num_layers"]):
        h = norm(mode, x, P["ln1w"][l], P["ln1b"][l])
        h = attention(h, P["qkvw"][l], P["qkvb"][l], cfg["num_heads"])
        w, b = (centred_out(P["attprojw"][l], P["attprojb"][l]) if c
                else (P["attprojw"][l], P["attprojb"][l]))
        x = x + (1 if drop is None else drop[:, l, 0, None, None]) * F.linear(h, w, b)
        h = norm(mode, x, P["ln2w"][l], P["ln2b"][l])
        h = gelu_tanh(F.linear(h, P["fcw"][l], P["fcb"][l]))
        w, b = (centred_out(P["fcprojw"][l], P["fcprojb"][l]) if c
                else (P["fcprojw"][l], P["fcprojb"][l]))
        x = x + (1 if drop is None else drop[:, l, 1, None, None]) * F.linear(h, w, b)
    x = norm(mode, x, P["lnfw"], P["lnfb"])
    logits = F.linear(x[:, 0], P["headw"], P["headb"])
    loss = F.cross_entropy(logits, labels, label_smoothing=smoothing)
    return logits, loss


def init_params(cfg, gen):
    """The 'test' init: random everything, so biases and affines matter."""
    P = {}
    for name, shp in shapes(cfg).items():
        if name in ("ln1w", "ln2w", "lnfw"):
            t = 1.0 + 0.1 * torch.randn(shp, generator=gen)
        elif name in ("ln1b", "ln2b", "lnfb"):
            t = 0.05 * torch.randn(shp, generator=gen)
        else:
            t = 0.05 * torch.randn(shp, generator=gen)
        P[name] = torch.nn.Parameter(t.float())
    return P


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=vf.MODES, help="norm mode (default: the loaded file's)")
    p.add_argument("--load", help="take the weights and config from this model file")
    p.add_argument("--image-size", type=int, default=8)
    p.add_argument("--image-channels", type=int, default=2)
    p.add_argument("--patch-size", type=int, default=2)
    p.add_argument("--num-classes", type=int, default=7)
    p.add_argument("--channels", type=int, default=24)
    p.add_argument("--num-layers", type=int, default=2)
    p.add_argument("--num-heads", type=int, default=3)
    p.add_argument("--mlp-ratio", type=int, default=4)
    p.add_argument("--B", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model", help="write the initial weights here")
    p.add_argument("--state", help="write the debug state here")
    p.add_argument("--steps", type=int, default=0, help="AdamW steps whose losses are recorded")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.999)
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--wd", type=float, default=0.05)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--smoothing", type=float, default=0.1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--drop-path", type=float, default=0.0,
                   help="stochastic depth rate (linear over depth), the masks drawn once")
    p.add_argument("--drop-path-scales", help="write the drop-path scales (B, blocks, 2) here")
    p.add_argument("--after-step", help="write the model after one AdamW step (timm's groups) here")
    p.add_argument("--after-step-all-decayed",
                   help="write the model after one AdamW step with decay on every tensor here")
    a = p.parse_args(argv)
    if a.load is None and a.mode is None:
        p.error("--mode is required unless --load is given")
    return a


def main(argv=None):
    a = parse_args(argv)
    torch.set_num_threads(a.threads)
    gen = torch.Generator().manual_seed(a.seed)
    keys = ("image_size", "image_channels", "patch_size", "num_classes", "channels",
            "num_layers", "num_heads", "mlp_ratio")
    if a.load:
        h, file_mode, flat = vf.read_model(a.load, "vit")
        cfg = {k: int(h[vf.SLOT[k]]) for k in keys}
        mode = a.mode or file_mode
        n = sum(int(np.prod(s)) for s in shapes(cfg).values())
        if flat.size != n:
            sys.exit(f"{a.load}: {flat.size} parameters, config needs {n}")
        P, off = {}, 0
        for name, shp in shapes(cfg).items():
            k = int(np.prod(shp))
            P[name] = torch.nn.Parameter(torch.from_numpy(flat[off:off + k].reshape(shp).copy()))
            off += k
    else:
        cfg = {k: getattr(a, k) for k in keys}
        mode = a.mode
    S, Cin = cfg["image_size"], cfg["image_channels"]
    images = torch.randn((a.B, Cin, S, S), generator=gen)
    labels = torch.randint(0, cfg["num_classes"], (a.B,), generator=gen)
    if not a.load:
        P = init_params(cfg, gen)
    params = [P[n] for n in NAMES]
    if a.model:
        vf.write_model(a.model, "vit", mode, cfg, [q.detach().numpy() for q in params])
    opt = torch.optim.AdamW(
        [{"params": [P[n] for n in NAMES if n in DECAYED], "weight_decay": a.wd},
         {"params": [P[n] for n in NAMES if n not in DECAYED], "weight_decay": 0.0}],
        lr=a.lr, betas=(a.beta1, a.beta2), eps=a.eps)
    drop = drop_path.draw(a.B, cfg["num_layers"], a.drop_path, gen) if a.drop_path > 0 else None
    if a.drop_path_scales:
        ones = torch.ones(a.B, cfg["num_layers"], 2)
        drop_path.write(a.drop_path_scales, drop if drop is not None else ones)
    logits, loss = vit_forward(P, cfg, mode, images, labels, a.smoothing, drop)
    loss.backward()
    logits0, loss0 = logits.detach().numpy().copy(), loss.item()
    grads0 = [q.grad.detach().numpy().copy() for q in params]
    hp = dict(lr=a.lr, beta1=a.beta1, beta2=a.beta2, eps=a.eps, wd=a.wd, clip=a.clip,
              smoothing=a.smoothing)
    for path, decay_all in ((a.after_step, False), (a.after_step_all_decayed, True)):
        if path:
            start = [q.detach().numpy() for q in params]
            vf.write_model(path, "vit", mode, cfg, param_groups.one_step(
                start, grads0, [n in DECAYED for n in NAMES], hp, decay_all))
    losses = [loss0]
    for _ in range(a.steps):
        if a.clip > 0:
            torch.nn.utils.clip_grad_norm_(params, a.clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        _, loss = vit_forward(P, cfg, mode, images, labels, a.smoothing, drop)
        loss.backward()
        losses.append(loss.item())
    losses = losses[:a.steps]
    if a.state:
        vf.write_state(a.state, "vit", images.numpy(), labels.numpy(), logits0, loss0,
                       grads0, losses, hp)
    print(f"vit.py: mode {mode}, {sum(q.numel() for q in params)} parameters, "
          f"loss {loss0:.6f}, {a.steps} steps"
          + (f", prms conditioning {vf.PRMS_CONDITIONING[0]:.1f}" if mode == "prms" else ""))


if __name__ == "__main__":
    main()
