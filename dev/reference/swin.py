#!/usr/bin/python3
"""Independent PyTorch reference for foldnorm's Swin Transformer (llmc/vision/swin.c).

Written after the official Swin code (Liu et al. 2021): torch.roll for the
cyclic shift, window_partition / window_reverse by view + permute, the
relative_position_index and the -100 attention mask built as there, patch
merging as cat(x[0::2,0::2], x[1::2,0::2], x[0::2,1::2], x[1::2,1::2]) ->
norm -> Linear(4C, 2C, bias=False), final norm, mean over tokens, head.

Writes the same two files as vit.py (family swin): --model (the vision model
file with the initial weights) and --state (images, labels, logits, loss,
every gradient, losses of N AdamW steps).

Norm modes (eps 1e-5): ln = LayerNorm everywhere; rms = RMSNorm with a bias
everywhere; prms = partial RMSNorm everywhere (vision_files.prms_norm); cbwc = the foldable norms become RMSNorm and the layers writing
their input are centred (CBWC: weight centred over outputs, bias centred),
so that cbwc computes the same function as ln. Foldable: the patch norm (the
patch conv centred); without --centre-ops only the last stage's block
norms and the final norm (its reduction, attn projs and fc2s centred): a
PatchMerging concat mixes tokens, so centring a stage that feeds one would
change the ln model. --centre-ops 1 inserts explicit x - mean(x) ops after
the patch norm and before every merge (in every mode): then every norm is
foldable. Non-foldable norms stay LayerNorm. A folded file (--load, mode
folded, from bin/fold) runs cbwc's RMS norms over its weights as stored
(they hold the centred tensors already).

--paper-variant 1 (cbwc only, no centring ops) is the paper's Swin instead:
every LayerNorm replaced by RMSNorm and every layer that writes a stream
centred (the patch conv, every merge's reduction, every attn proj and fc2:
V = W - the mean of each column, b - mean(b)). Not the ln model: a merge's
concat sees the per-token offsets the centring removes.
"""

import argparse
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


def norm(kind, x, g, b):
    if kind == "ln":
        return F.layer_norm(x, (x.shape[-1],), g, b, EPS)
    if kind == "prms":
        return vf.prms_norm(x, g, b, EPS)
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + EPS) * g + b


def centred_out(w, b=None):
    v = w - w.mean(0, keepdim=True)
    return v, (None if b is None else b - b.mean())


def window_partition(x, ws):
    B, H, W, C = x.shape
    x = x.view(B, H // ws, ws, W // ws, ws, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, ws * ws, C)


def window_reverse(windows, ws, H, W):
    B = windows.shape[0] // ((H // ws) * (W // ws))
    x = windows.view(B, H // ws, W // ws, ws, ws, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)


def relative_position_index(ws):
    coords = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij"))
    flat = coords.flatten(1)
    rel = (flat[:, :, None] - flat[:, None, :]).permute(1, 2, 0).contiguous()
    rel[:, :, 0] += ws - 1
    rel[:, :, 1] += ws - 1
    rel[:, :, 0] *= 2 * ws - 1
    return rel.sum(-1)


def shift_mask(res, ws, shift):
    img = torch.zeros((1, res, res, 1))
    cnt = 0
    for hs in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
        for wsl in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
            img[:, hs, wsl, :] = cnt
            cnt += 1
    mw = window_partition(img, ws).squeeze(-1)
    m = mw.unsqueeze(1) - mw.unsqueeze(2)
    return m.masked_fill(m != 0, -100.0).masked_fill(m == 0, 0.0)


class Arch:
    """Shapes and parameter layout (file order) for a config."""

    def __init__(self, cfg):
        self.cfg = cfg
        S, P, E = cfg["image_size"], cfg["patch_size"], cfg["embed_dim"]
        self.res0 = S // P
        self.tensors = []            # (name, shape, decayed)
        add = lambda n, s, d=False: self.tensors.append((n, s, d))
        add("patchw", (E, cfg["image_channels"], P, P), True)
        add("patchb", (E,))
        add("pnw", (E,))
        add("pnb", (E,))
        self.blocks, res = [], self.res0
        for s in range(cfg["num_stages"]):
            C = E << s
            if s > 0:
                res //= 2
                add(f"s{s}.mnw", (2 * C,))
                add(f"s{s}.mnb", (2 * C,))
                add(f"s{s}.redw", (C, 2 * C), True)
            ws = min(cfg["window"], res)
            for i in range(cfg["depths"][s]):
                shift = cfg["window"] // 2 if (i % 2 == 1 and res > cfg["window"]) else 0
                NH = cfg["heads"][s]
                H = cfg["mlp_ratio"] * C
                pre = f"s{s}.b{i}."
                for n, shp, d in (("ln1w", (C,), False), ("ln1b", (C,), False),
                                  ("qkvw", (3 * C, C), True), ("qkvb", (3 * C,), False),
                                  ("rpb", ((2 * ws - 1) ** 2, NH), False),
                                  ("projw", (C, C), True), ("projb", (C,), False),
                                  ("ln2w", (C,), False), ("ln2b", (C,), False),
                                  ("fcw", (H, C), True), ("fcb", (H,), False),
                                  ("fc2w", (C, H), True), ("fc2b", (C,), False)):
                    add(pre + n, shp, d)
                self.blocks.append(dict(stage=s, i=i, C=C, NH=NH, res=res, ws=ws, shift=shift,
                                        pre=pre))
        CL = E << (cfg["num_stages"] - 1)
        add("lnfw", (CL,))
        add("lnfb", (CL,))
        add("headw", (cfg["num_classes"], CL), True)
        add("headb", (cfg["num_classes"],))


def zero_mean_stream(cfg, stage):
    """Can stage's stream be centred without changing the ln model? Only if no
    PatchMerging reads it (the concat mixes tokens with different offsets),
    unless the explicit centring ops remove the offsets before every merge."""
    return cfg["centre_ops"] == 1 or (stage == cfg["num_stages"] - 1 and stage >= 1)


def swin_forward(P, arch, mode, images, labels, smoothing, drop=None):
    """drop: None or the drop-path scales (B, blocks, 2) of the branches."""
    cfg = arch.cfg
    c = mode == "cbwc"
    paper = c and cfg.get("paper_variant", 0) == 1  # every norm RMS, every stream writer centred

    def kind(foldable):
        if mode in ("ln", "rms", "prms"):
            return mode
        return "rms" if foldable or paper else "ln"

    pw, pb = centred_out(P["patchw"], P["patchb"]) if c else (P["patchw"], P["patchb"])
    x = F.conv2d(images, pw, pb, stride=cfg["patch_size"]).permute(0, 2, 3, 1)   # (B, H, W, E)
    x = norm(kind(True), x, P["pnw"], P["pnb"])
    if cfg["centre_ops"]:
        x = x - x.mean(-1, keepdim=True)
    B = x.shape[0]
    stage = 0
    for i, blk in enumerate(arch.blocks):
        s = blk["stage"]
        if s != stage:                                       # patch merging into stage s
            stage = s
            if cfg["centre_ops"]:
                x = x - x.mean(-1, keepdim=True)
            x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2],
                           x[:, 1::2, 1::2]], dim=-1)
            x = norm(kind(cfg["centre_ops"] == 1), x, P[f"s{s}.mnw"], P[f"s{s}.mnb"])
            rw = P[f"s{s}.redw"]
            x = F.linear(x, centred_out(rw)[0] if paper or c and zero_mean_stream(cfg, s) else rw)
        pre, C, NH, res, ws, sh = blk["pre"], blk["C"], blk["NH"], blk["res"], blk["ws"], blk["shift"]
        zm = zero_mean_stream(cfg, s)
        cen = paper or c and zm
        h = norm(kind(zm), x, P[pre + "ln1w"], P[pre + "ln1b"])
        if sh > 0:
            h = torch.roll(h, shifts=(-sh, -sh), dims=(1, 2))
        win = window_partition(h, ws)                          # (B*nW, T, C)
        Bw, T, _ = win.shape
        qkv = F.linear(win, P[pre + "qkvw"], P[pre + "qkvb"])
        q, k, v = qkv.reshape(Bw, T, 3, NH, C // NH).permute(2, 0, 3, 1, 4)
        att = (q * (C // NH) ** -0.5) @ k.transpose(-2, -1)
        idx = relative_position_index(ws).view(-1)
        bias = P[pre + "rpb"][idx].view(T, T, NH).permute(2, 0, 1)
        att = att + bias.unsqueeze(0)
        if sh > 0:
            mask = shift_mask(res, ws, sh)                     # (nW, T, T)
            nW = mask.shape[0]
            att = att.view(Bw // nW, nW, NH, T, T) + mask.unsqueeze(1).unsqueeze(0)
            att = att.view(-1, NH, T, T)
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(Bw, T, C)
        y = window_reverse(y, ws, res, res)
        if sh > 0:
            y = torch.roll(y, shifts=(sh, sh), dims=(1, 2))
        w, b = P[pre + "projw"], P[pre + "projb"]
        if cen:
            w, b = centred_out(w, b)
        x = x + (1 if drop is None else drop[:, i, 0, None, None, None]) * F.linear(y, w, b)
        h = norm(kind(zm), x, P[pre + "ln2w"], P[pre + "ln2b"])
        h = F.gelu(F.linear(h, P[pre + "fcw"], P[pre + "fcb"]), approximate="tanh")
        w, b = P[pre + "fc2w"], P[pre + "fc2b"]
        if cen:
            w, b = centred_out(w, b)
        x = x + (1 if drop is None else drop[:, i, 1, None, None, None]) * F.linear(h, w, b)
    x = norm(kind(zero_mean_stream(cfg, cfg["num_stages"] - 1)), x, P["lnfw"], P["lnfb"])
    pooled = x.reshape(B, -1, x.shape[-1]).mean(1)
    logits = F.linear(pooled, P["headw"], P["headb"])
    return logits, F.cross_entropy(logits, labels, label_smoothing=smoothing)


def init_params(arch, gen):
    P = {}
    for name, shp, _ in arch.tensors:
        base = name.split(".")[-1]
        if base in ("ln1w", "ln2w", "lnfw", "pnw", "mnw"):
            t = 1.0 + 0.1 * torch.randn(shp, generator=gen)
        else:
            t = 0.05 * torch.randn(shp, generator=gen)
        P[name] = torch.nn.Parameter(t.float())
    return P


def int_list(s):
    return [int(v) for v in s.split(",")]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=vf.MODES)
    p.add_argument("--load", help="take the weights and config from this model file")
    p.add_argument("--image-size", type=int, default=16)
    p.add_argument("--image-channels", type=int, default=2)
    p.add_argument("--patch-size", type=int, default=2)
    p.add_argument("--num-classes", type=int, default=5)
    p.add_argument("--embed-dim", type=int, default=12)
    p.add_argument("--depths", type=int_list, default=[2, 2])
    p.add_argument("--heads", type=int_list, default=[2, 4])
    p.add_argument("--window", type=int, default=4)
    p.add_argument("--mlp-ratio", type=int, default=2)
    p.add_argument("--centre-ops", type=int, choices=(0, 1), default=0)
    p.add_argument("--paper-variant", type=int, choices=(0, 1), default=0,
                   help="the paper's Swin: cbwc with every norm RMS and every stream writer "
                   "centred (not the ln model)")
    p.add_argument("--B", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model")
    p.add_argument("--state")
    p.add_argument("--steps", type=int, default=0)
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
    torch.set_num_threads(a.threads)
    gen = torch.Generator().manual_seed(a.seed)
    if a.load:
        h, file_mode, flat = vf.read_model(a.load, "swin")
        ns = int(h[vf.SLOT["num_layers"]])
        cfg = dict(image_size=int(h[4]), image_channels=int(h[5]), patch_size=int(h[6]),
                   num_classes=int(h[7]), embed_dim=int(h[8]), num_stages=ns,
                   mlp_ratio=int(h[11]), window=int(h[12]), centre_ops=int(h[13]),
                   paper_variant=int(h[vf.SLOT["paper_variant"]]),
                   depths=[int(v) for v in h[16:16 + ns]], heads=[int(v) for v in h[24:24 + ns]])
        mode = a.mode or file_mode
    else:
        if len(a.depths) != len(a.heads):
            p.error("--depths and --heads need one value per stage")
        cfg = dict(image_size=a.image_size, image_channels=a.image_channels,
                   patch_size=a.patch_size, num_classes=a.num_classes, embed_dim=a.embed_dim,
                   num_stages=len(a.depths), mlp_ratio=a.mlp_ratio, window=a.window,
                   centre_ops=a.centre_ops, paper_variant=a.paper_variant, depths=a.depths,
                   heads=a.heads)
        mode = a.mode
    if cfg.get("paper_variant", 0) and (mode != "cbwc" or cfg["centre_ops"]):
        p.error("--paper-variant 1 is a cbwc model without centring ops")
    arch = Arch(cfg)
    S, Cin = cfg["image_size"], cfg["image_channels"]
    images = torch.randn((a.B, Cin, S, S), generator=gen)
    labels = torch.randint(0, cfg["num_classes"], (a.B,), generator=gen)
    if a.load:
        P, off = {}, 0
        for name, shp, _ in arch.tensors:
            k = int(np.prod(shp))
            P[name] = torch.nn.Parameter(torch.from_numpy(flat[off:off + k].reshape(shp).copy()))
            off += k
        if off != flat.size:
            sys.exit(f"{a.load}: {flat.size} parameters, config needs {off}")
    else:
        P = init_params(arch, gen)
    names = [n for n, _, _ in arch.tensors]
    params = [P[n] for n in names]
    fields = {k: cfg[k] for k in ("image_size", "image_channels", "patch_size",
                                  "num_classes", "mlp_ratio", "window", "centre_ops",
                                  "paper_variant")}
    fields.update(channels=cfg["embed_dim"], num_layers=cfg["num_stages"],
                  depths=cfg["depths"], heads=cfg["heads"])
    if a.model:
        vf.write_model(a.model, "swin", mode, fields, [q.detach().numpy() for q in params])
    decayed = {n for n, _, d in arch.tensors if d}
    opt = torch.optim.AdamW(
        [{"params": [P[n] for n in names if n in decayed], "weight_decay": a.wd},
         {"params": [P[n] for n in names if n not in decayed], "weight_decay": 0.0}],
        lr=a.lr, betas=(a.beta1, a.beta2), eps=a.eps)
    nb = len(arch.blocks)
    drop = drop_path.draw(a.B, nb, a.drop_path, gen) if a.drop_path > 0 else None
    if a.drop_path_scales:
        drop_path.write(a.drop_path_scales, drop if drop is not None else torch.ones(a.B, nb, 2))
    logits, loss = swin_forward(P, arch, mode, images, labels, a.smoothing, drop)
    loss.backward()
    logits0, loss0 = logits.detach().numpy().copy(), loss.item()
    grads0 = [q.grad.detach().numpy().copy() for q in params]
    hp = dict(lr=a.lr, beta1=a.beta1, beta2=a.beta2, eps=a.eps, wd=a.wd, clip=a.clip,
              smoothing=a.smoothing)
    for path, decay_all in ((a.after_step, False), (a.after_step_all_decayed, True)):
        if path:
            start = [q.detach().numpy() for q in params]
            vf.write_model(path, "swin", mode, fields, param_groups.one_step(
                start, grads0, [n in decayed for n in names], hp, decay_all))
    losses = [loss0]
    for _ in range(a.steps):
        if a.clip > 0:
            torch.nn.utils.clip_grad_norm_(params, a.clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        _, loss = swin_forward(P, arch, mode, images, labels, a.smoothing, drop)
        loss.backward()
        losses.append(loss.item())
    losses = losses[:a.steps]
    if a.state:
        vf.write_state(a.state, "swin", images.numpy(), labels.numpy(), logits0, loss0,
                       grads0, losses, hp)
    print(f"swin.py: mode {mode}, {sum(q.numel() for q in params)} parameters, "
          f"loss {loss0:.6f}, {a.steps} steps, blocks "
          + " ".join(f"s{b['stage']}(res {b['res']} win {b['ws']} shift {b['shift']})"
                     for b in arch.blocks)
          + (f", prms conditioning {vf.PRMS_CONDITIONING[0]:.1f}" if mode == "prms" else ""))


if __name__ == "__main__":
    main()
