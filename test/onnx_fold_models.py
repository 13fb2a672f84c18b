#!/usr/bin/env python3
"""Models for the ONNX fold test (test/suites/onnx_fold.sh), written as a
user's own modules would be: exported by torch.onnx.export (opset 17) into
OUTDIR, one line per model in OUTDIR/models.txt:
    NAME<TAB>ORT input specs (test/onnx_fold_ort.js)

  onnx_fold_models.py OUTDIR [--zoo]

- phi, bert, opt125 (and *_dyn: symbolic batch and sequence axes): Phi-,
  BERT- and OPT-125m-shaped models in plain torch.nn (Phi: one LN per block
  feeding attention and MLP in parallel; BERT: embeddings LN, post-LN blocks;
  OPT-125m: pre-LN, a final LN, the head tied to the embedding);
- opt350: OPT-350m-shaped, post-LN with project_in / _out (nothing folds);
- ln_only: an LN reading the network input (nothing folds: the fold must
  leave the model as it was);
- ln2d: Conv -> an LN over the channels of NCHW written as mean / variance
  over axis 1 (foldable: the fold centres the conv and keeps the primitive
  ops, which compute the RMS norm on a zero-mean input), dynamic batch;
  ln2d_gf: the same with gamma applied before the division (counted, not
  analysed: nothing folds);
- with --zoo and torchvision installed: torchvision's own VisionTransformer,
  SwinTransformer and ConvNeXt classes at small sizes (a few blocks, narrow)
  for the ORT comparison, and the full swin_t and convnext_tiny (224 x 224)
  for foldcheck's verdicts. Every parameter gets N(0, 0.02) noise added, so
  the zero-initialised heads and biases of a fresh model are not zero.
Without torchvision the zoo models are left out and models.txt says so
(a line "SKIP<TAB>reason")."""
import os
import sys
import time

import torch
import torch.nn as nn

OUT = sys.argv[1]
ZOO = "--zoo" in sys.argv
os.makedirs(OUT, exist_ok=True)
lines = []


def perturb(model, seed):
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.02)
    return model.eval()


def export(model, args, name, input_names, specs, dynamic=False):
    path = os.path.join(OUT, name + ".onnx")
    if not os.path.exists(path):  # a cached export (the suite's work dir) is reused
        t0 = time.time()
        axes = {n: dynamic if isinstance(dynamic, dict) else {0: "B", 1: "T"}
                for n in input_names} if dynamic else None
        torch.onnx.export(model, args, path, opset_version=17, input_names=input_names,
                          output_names=["out"], dynamic_axes=axes)
        print(f"{name}: exported in {time.time() - t0:.1f} s")
    lines.append(f"{name}\t{specs}")


class PhiBlock(nn.Module):
    """x + attn(ln(x)) + mlp(ln(x)): one norm, two parallel branches."""

    def __init__(self, C, NH):
        super().__init__()
        self.ln = nn.LayerNorm(C)
        self.attn = nn.MultiheadAttention(C, NH, batch_first=True)
        self.fc1, self.fc2 = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        h = self.ln(x)
        T = x.shape[1]
        mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        a = self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + a + self.fc2(nn.functional.gelu(self.fc1(h), approximate="tanh"))


class Phi(nn.Module):
    def __init__(self, V=64, C=32, NH=2, L=2):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.blocks = nn.ModuleList([PhiBlock(C, NH) for _ in range(L)])
        self.ln_f = nn.LayerNorm(C)
        self.head = nn.Linear(C, V)

    def forward(self, idx):
        x = self.wte(idx)
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln_f(x))


class PostLNBlock(nn.Module):
    """BERT's and OPT-350m's block: LN(x + attn(x)), then LN(h + mlp(h))."""

    def __init__(self, C, NH, act):
        super().__init__()
        self.attn = nn.MultiheadAttention(C, NH, batch_first=True)
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.fc1, self.fc2, self.act = nn.Linear(C, 4 * C), nn.Linear(4 * C, C), act

    def forward(self, x):
        x = self.ln1(x + self.attn(x, x, x, need_weights=False)[0])
        return self.ln2(x + self.fc2(self.act(self.fc1(x))))


class PreLNBlock(nn.Module):
    """OPT-125m's block: x + attn(LN(x)), then h + mlp(LN(h)) (ReLU)."""

    def __init__(self, C, NH):
        super().__init__()
        self.attn = nn.MultiheadAttention(C, NH, batch_first=True)
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.fc1, self.fc2 = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.fc2(torch.relu(self.fc1(self.ln2(x))))


class BERT(nn.Module):
    """Word + position + token-type embeddings, LN, post-LN blocks, an MLM head."""

    def __init__(self, V=64, T=32, C=32, NH=2, L=2):
        super().__init__()
        self.wte, self.wpe, self.wtt = nn.Embedding(V, C), nn.Embedding(T, C), nn.Embedding(2, C)
        self.ln_e = nn.LayerNorm(C)
        self.blocks = nn.ModuleList([PostLNBlock(C, NH, nn.GELU()) for _ in range(L)])
        self.head = nn.Linear(C, V)

    def forward(self, idx, types):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.ln_e(self.wte(idx) + self.wpe(pos) + self.wtt(types))
        for b in self.blocks:
            x = b(x)
        return self.head(x)


class OPT(nn.Module):
    """pre_ln: OPT-125m (final LN); else OPT-350m (post-LN, project_in / _out E <-> C)."""

    def __init__(self, pre_ln, V=64, T=32, C=32, E=16, NH=2, L=2):
        super().__init__()
        self.pre_ln = pre_ln
        self.wte = nn.Embedding(V, C if pre_ln else E)
        self.wpe = nn.Embedding(T + 2, C)  # OPT's positions start at offset 2
        self.project_in = None if pre_ln else nn.Linear(E, C, bias=False)
        self.project_out = None if pre_ln else nn.Linear(C, E, bias=False)
        self.blocks = nn.ModuleList([PreLNBlock(C, NH) if pre_ln else
                                     PostLNBlock(C, NH, nn.ReLU()) for _ in range(L)])
        self.ln_f = nn.LayerNorm(C) if pre_ln else None

    def forward(self, idx):
        x = self.wte(idx)
        if self.project_in is not None:
            x = self.project_in(x)
        x = x + self.wpe(torch.arange(idx.shape[1], device=idx.device) + 2)
        for b in self.blocks:
            x = b(x)
        x = self.ln_f(x) if self.ln_f is not None else self.project_out(x)
        return x @ self.wte.weight.t()  # the tied head


idx = torch.randint(0, 64, (2, 16), generator=torch.Generator().manual_seed(0))
types = torch.randint(0, 2, (2, 16), generator=torch.Generator().manual_seed(1))
phi = perturb(Phi(), 1)
export(phi, (idx,), "phi", ["idx"], "idx:int64:2x16:64")
export(phi, (idx,), "phi_dyn", ["idx"], "idx:int64:3x9:64", dynamic=True)
bert = perturb(BERT(), 8)
export(bert, (idx, types), "bert", ["idx", "types"], "idx:int64:2x16:64 types:int64:2x16:2")
export(bert, (idx, types), "bert_dyn", ["idx", "types"], "idx:int64:3x9:64 types:int64:3x9:2",
       dynamic=True)
opt = perturb(OPT(pre_ln=True), 9)
export(opt, (idx,), "opt125", ["idx"], "idx:int64:2x16:64")
export(opt, (idx,), "opt125_dyn", ["idx"], "idx:int64:3x9:64", dynamic=True)
# OPT-350m: post-LN, nothing folds (0/4), the fold is the model as it was
export(perturb(OPT(pre_ln=False), 10), (idx,), "opt350", ["idx"], "idx:int64:2x16:64")
export(perturb(nn.Sequential(nn.LayerNorm(16), nn.Linear(16, 8)), 2), (torch.randn(2, 5, 16),),
       "ln_only", ["x"], "x:float:2x5x16")

class LayerNorm2d(nn.Module):
    """ConvNeXt's channels-first LN written out (its original code): mean and
    variance over axis 1 of NCHW; gamma_first: gamma * (x - u) / std, an order
    the reader does not follow (the norm is counted, not analysed)."""

    def __init__(self, C, gamma_first=False):
        super().__init__()
        self.w, self.b = nn.Parameter(torch.ones(C)), nn.Parameter(torch.zeros(C))
        self.gamma_first = gamma_first

    def forward(self, x):
        u = x.mean(1, keepdim=True)
        v = (x - u).pow(2).mean(1, keepdim=True)
        if self.gamma_first:
            return self.w[:, None, None] * (x - u) / torch.sqrt(v + 1e-6) + self.b[:, None, None]
        x = (x - u) / torch.sqrt(v + 1e-6)
        return self.w[:, None, None] * x + self.b[:, None, None]


for name, gamma_first in (("ln2d", False), ("ln2d_gf", True)):
    ln2d = nn.Sequential(nn.Conv2d(3, 16, 4, 4), LayerNorm2d(16, gamma_first), nn.Conv2d(16, 8, 2, 2))
    export(perturb(ln2d, 7), (torch.randn(1, 3, 32, 32),), name, ["x"], "x:float:2x3x32x32",
           dynamic={0: "B"})

if ZOO:
    try:
        import torchvision
        from torchvision.models.convnext import CNBlockConfig, ConvNeXt
        from torchvision.models.swin_transformer import SwinTransformer
        from torchvision.models.vision_transformer import VisionTransformer
    except ImportError as e:
        lines.append(f"SKIP\ttorchvision not installed ({e}; scripts/deps/onnx.txt lists "
                     "python3-torchvision)")
    else:
        img32 = torch.randn(1, 3, 32, 32)
        vit = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                hidden_dim=32, mlp_dim=64, num_classes=10)
        export(perturb(vit, 3), (img32,), "tv_vit", ["image"], "image:float:1x3x32x32")
        # 56 x 56 input: stages of 14, 7, 4 (padded to 7: Pad with non-zero pads), 2
        swin = SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2, 2, 2],
                               num_heads=[1, 1, 2, 2], window_size=[7, 7], num_classes=10)
        export(perturb(swin, 4), (torch.randn(1, 3, 56, 56),), "tv_swin", ["image"],
               "image:float:1x3x56x56")
        cnx = ConvNeXt([CNBlockConfig(16, 32, 2), CNBlockConfig(32, None, 2)], num_classes=10)
        export(perturb(cnx, 5), (img32,), "tv_convnext", ["image"], "image:float:1x3x32x32")
        img224 = torch.randn(1, 3, 224, 224)
        for name in ("swin_t", "convnext_tiny"):
            model = getattr(torchvision.models, name)(weights=None)
            export(perturb(model, 6), (img224,), name, ["image"], "image:float:1x3x224x224")

with open(os.path.join(OUT, "models.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
