"""Small real PyTorch models exported to ONNX for foldcheck's ONNX reader
(test/suites/onnx_graph.sh), and the numerical check of the verdicts.

  onnx_models.py OUTDIR    writes OUTDIR/*.onnx and OUTDIR/expected.txt

Models (written here, independent of the C code):
  gpt_ref     dev/reference/gpt2.py's GPT-2 (ln mode): its hand-written LN
              (mean, x - mu, (x - mu)^2, mean, + eps, rsqrt, gain, bias)
  gpt_o17     a GPT-2-like pre-LN stack of nn modules, opset 17 (LayerNormalization)
  gpt_o14     the same at opset 14 (torch writes LN as ReduceMean/Sub/Pow/...)
  gpt_dyn     gpt_o17 with symbolic batch and sequence axes
  bert_o17/14 a BERT-like post-LN stack (word + position + token-type embeddings)
  vit_o17/14  a ViT-like stack (conv patches, cls token, positions, pre-LN)
  opt125_o17/14  an OPT-125m-like stack (pre-LN, Hugging Face's module layout)
  opt350_o17/14  an OPT-350m-like one (post-LN, project_in/out, no final LN)
  swin_o17/14 dev/reference/swin.py's Swin at a tiny config (2 stages, shifted
              windows, relative position bias, patch merging)
  swinc_o17/14  the same with its explicit centring ops (--centre-ops 1)
expected.txt holds one line per model: NAME<TAB>foldcheck's last line as
worked out by hand from where the norms sit (see the comments at each model).

The numerical check: for the GPT-, BERT-, OPT- and Swin models the fold the
verdict allows (centre the CBWC layers, LN -> RMSNorm for the foldable LNs)
must leave the outputs unchanged (1e-5 relative), while also folding an LN
the verdict calls not foldable must change them. Exits 1 on a failed check.
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "dev", "reference"))
import gpt2 as ref  # noqa: E402
import swin  # noqa: E402

torch.manual_seed(0)
OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
expected = []


def export(model, args, name, opset, input_names, dynamic=False):
    model.eval()
    axes = {n: {0: "B", 1: "T"} for n in input_names} if dynamic else None
    torch.onnx.export(model, args, os.path.join(OUT, name + ".onnx"), opset_version=opset,
                      input_names=input_names, output_names=["out"], dynamic_axes=axes)


class Norm(nn.Module):
    """LayerNorm, or the RMSNorm it folds to (same gain and bias)."""

    def __init__(self, C):
        super().__init__()
        self.ln = nn.LayerNorm(C)
        self.rms = False

    def forward(self, x):
        if self.rms:
            x = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.ln.eps)
            return x * self.ln.weight + self.ln.bias
        return self.ln(x)


class Attention(nn.Module):
    def __init__(self, C, NH, causal):
        super().__init__()
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.NH, self.causal = NH, causal

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.NH, C // self.NH).transpose(1, 2) for t in (q, k, v))
        s = q @ k.transpose(-2, -1) / math.sqrt(C // self.NH)
        if self.causal:
            s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
        y = (F.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        return self.proj(y)


class Mlp(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.fc, self.proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))  # exact GELU: Erf in ONNX


class PreLNBlock(nn.Module):
    def __init__(self, C, NH, causal):
        super().__init__()
        self.ln1, self.ln2 = Norm(C), Norm(C)
        self.attn, self.mlp = Attention(C, NH, causal), Mlp(C)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    # pre-LN: 2L + 1 LNs, all foldable; S = wte, wpe, L attn.proj, L mlp.proj
    def __init__(self, V=64, T=16, C=32, NH=2, L=2):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Parameter(0.02 * torch.randn(T, C))
        self.blocks = nn.ModuleList(PreLNBlock(C, NH, True) for _ in range(L))
        self.lnf = Norm(C)
        self.head = nn.Linear(C, V, bias=False)

    def cbwc_layers(self):
        return [self.wte, self.wpe] + [m for b in self.blocks for m in (b.attn.proj, b.mlp.proj)]

    def norms(self):
        return [n for b in self.blocks for n in (b.ln1, b.ln2)] + [self.lnf]

    def forward(self, idx):
        x = self.wte(idx) + self.wpe[: idx.shape[1]]
        for b in self.blocks:
            x = b(x)
        return self.head(self.lnf(x))


class BERT(nn.Module):
    # post-LN: 1 + 2L LNs and the MLM head's (dense, GELU, LN, decoder), as the
    # bert-base built-in; only the embedding LN folds (its input is word +
    # position + token-type embeddings: S = those 3); every block LN reads the
    # previous LN's affine output plus a branch, the head's reads a GELU. The
    # decoder is untied here (the built-in ties it to word; the verdict is the
    # same, and centring word in place would change a tied decoder's logits)
    def __init__(self, V=64, T=16, C=32, NH=2, L=2):
        super().__init__()
        self.word, self.ttype = nn.Embedding(V, C), nn.Embedding(2, C)
        self.pos = nn.Embedding(T, C)
        self.ln_emb = Norm(C)
        self.attn = nn.ModuleList(Attention(C, NH, False) for _ in range(L))
        self.ln_attn = nn.ModuleList(Norm(C) for _ in range(L))
        self.mlp = nn.ModuleList(Mlp(C) for _ in range(L))
        self.ln_mlp = nn.ModuleList(Norm(C) for _ in range(L))
        self.mlm_dense, self.ln_mlm, self.decoder = nn.Linear(C, C), Norm(C), nn.Linear(C, V)

    def cbwc_layers(self):
        return [self.word, self.ttype, self.pos]

    def norms(self):
        return ([self.ln_emb] + [n for p in zip(self.ln_attn, self.ln_mlp) for n in p] +
                [self.ln_mlm])

    def forward(self, idx, types):
        pos = torch.arange(idx.shape[1])
        x = self.ln_emb(self.word(idx) + self.pos(pos) + self.ttype(types))
        for a, la, m, lm in zip(self.attn, self.ln_attn, self.mlp, self.ln_mlp):
            x = la(x + a(x))
            x = lm(x + m(x))
        return self.decoder(self.ln_mlm(F.gelu(self.mlm_dense(x))))


class ViT(nn.Module):
    # pre-LN: 2L + 1 LNs, all foldable; S = patch conv, cls, pos, L attn.proj, L mlp.proj
    def __init__(self, image=8, patch=4, chans=3, C=32, NH=2, L=2, classes=5):
        super().__init__()
        n = (image // patch) ** 2
        self.patch = nn.Conv2d(chans, C, patch, patch)
        self.cls = nn.Parameter(0.02 * torch.randn(1, 1, C))
        self.pos = nn.Parameter(0.02 * torch.randn(1, n + 1, C))
        self.blocks = nn.ModuleList(PreLNBlock(C, NH, False) for _ in range(L))
        self.lnf = Norm(C)
        self.head = nn.Linear(C, classes)

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        for b in self.blocks:
            x = b(x)
        return self.head(self.lnf(x)[:, 0])


class OptAttention(nn.Module):
    # OPT's attention: separate q/k/v projections, q scaled before the scores, causal
    def __init__(self, C, NH):
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj = nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)
        self.out_proj = nn.Linear(C, C)
        self.NH = NH

    def forward(self, x):
        B, T, C = x.shape
        q = self.q_proj(x) * (C // self.NH) ** -0.5
        q, k, v = (t.view(B, T, self.NH, C // self.NH).transpose(1, 2)
                   for t in (q, self.k_proj(x), self.v_proj(x)))
        s = (q @ k.transpose(-2, -1)).masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1),
                                                  float("-inf"))
        return self.out_proj((F.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, C))


class OptLayer(nn.Module):
    # Hugging Face's OPTDecoderLayer: ReLU MLP (fc1, fc2); do_layer_norm_before
    # = True (125m): x + attn(LN(x)), then + fc2(relu(fc1(LN(.)))); False
    # (350m): LN(x + attn(x)), then LN(. + fc2(relu(fc1(.))))
    def __init__(self, C, NH, pre_ln):
        super().__init__()
        self.self_attn = OptAttention(C, NH)
        self.self_attn_layer_norm, self.final_layer_norm = Norm(C), Norm(C)
        self.fc1, self.fc2 = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
        self.pre_ln = pre_ln

    def forward(self, x):
        if self.pre_ln:
            x = x + self.self_attn(self.self_attn_layer_norm(x))
            return x + self.fc2(F.relu(self.fc1(self.final_layer_norm(x))))
        x = self.self_attn_layer_norm(x + self.self_attn(x))
        return self.final_layer_norm(x + self.fc2(F.relu(self.fc1(x))))


class OPT(nn.Module):
    # OPT-125m style (pre_ln, embed == C): 2L + 1 LNs, all foldable; S =
    # embed_tokens, embed_positions, L out_proj, L fc2.
    # OPT-350m style (post-LN, embeddings E wide through project_in /
    # project_out, no final LN): 2L LNs, none foldable: the first LN's input
    # x0 + attn(x0) would be zero-mean with project_in, the positions and
    # out_proj centred, but x0 also feeds q/k/v (a shift they do not absorb);
    # every later LN reads an LN's affine output plus a branch.
    # Positions: OPT's learned table with its offset 2 (rows 2 .. T + 1 used).
    def __init__(self, pre_ln, V=64, T=16, C=32, E=32, NH=2, L=2):
        super().__init__()
        self.embed_tokens = nn.Embedding(V, E)
        self.embed_positions = nn.Embedding(T + 2, C)
        self.project_in = nn.Linear(E, C, bias=False) if E != C else None
        self.project_out = nn.Linear(C, E, bias=False) if E != C else None
        self.layers = nn.ModuleList(OptLayer(C, NH, pre_ln) for _ in range(L))
        self.final_layer_norm = Norm(C) if pre_ln else None
        self.lm_head = nn.Linear(E, V, bias=False)

    def cbwc_layers(self):
        if self.final_layer_norm is None:
            return []
        return [self.embed_tokens, self.embed_positions] + [
            m for l in self.layers for m in (l.self_attn.out_proj, l.fc2)]

    def norms(self):
        ns = [n for l in self.layers for n in (l.self_attn_layer_norm, l.final_layer_norm)]
        return ns + ([self.final_layer_norm] if self.final_layer_norm is not None else [])

    def forward(self, idx):
        x = self.embed_tokens(idx)
        if self.project_in is not None:
            x = self.project_in(x)
        x = x + self.embed_positions(torch.arange(idx.shape[1]) + 2)
        for layer in self.layers:
            x = layer(x)
        if self.final_layer_norm is not None:
            x = self.final_layer_norm(x)
        if self.project_out is not None:
            x = self.project_out(x)
        return self.lm_head(x)


class RefGPT(nn.Module):
    """dev/reference/gpt2.py's model, logits only."""

    def __init__(self, L):
        super().__init__()
        self.m = ref.GPT(64, 64, 16, L, 2, 32, "ln")
        self.m.init_weights("test", torch.Generator().manual_seed(1))

    def forward(self, idx):
        return self.m(idx, torch.zeros_like(idx))[0]


class RefSwin(nn.Module):
    """dev/reference/swin.py's Swin (16x16x2 images, patch 2, embed 8, depths
    2,2, heads 2,4, window 4 with the shifted second block), logits only;
    centre_ops: its explicit x - mean(x) after the patch norm and before the
    merge. mode: swin.py's norm mode (ln, rms: every norm RMS; cbwc: the
    foldable ones RMS with their writers centred)."""

    def __init__(self, centre_ops, mode="ln", centred=()):
        super().__init__()
        self.cfg = dict(image_size=16, image_channels=2, patch_size=2, num_classes=5, embed_dim=8,
                        depths=[2, 2], heads=[2, 4], window=4, mlp_ratio=2, centre_ops=centre_ops,
                        num_stages=2)
        self.arch = swin.Arch(self.cfg)
        P = swin.init_params(self.arch, torch.Generator().manual_seed(5))
        with torch.no_grad():
            for name in centred:  # the weight (and bias) of a layer, centred over its outputs
                P[name + "w"] -= P[name + "w"].mean(0, keepdim=True)
                if name + "b" in P:
                    P[name + "b"] -= P[name + "b"].mean()
        self.names = list(P)
        self.p = nn.ParameterList(P[n] for n in self.names)
        self.mode = mode

    def forward(self, img):
        P = dict(zip(self.names, self.p))
        labels = torch.zeros(img.shape[0], dtype=torch.long)
        return swin.swin_forward(P, self.arch, self.mode, img, labels, 0.0)[0]


def centre(module):
    """CBWC on a layer: its outputs (rows of a table, a linear map's outputs
    with the bias, a learned tensor) centred over the feature axis."""
    with torch.no_grad():
        if isinstance(module, nn.Parameter):
            module -= module.mean(-1, keepdim=True)
        elif isinstance(module, nn.Embedding):
            module.weight -= module.weight.mean(1, keepdim=True)
        else:
            module.weight -= module.weight.mean(0, keepdim=True)
            if module.bias is not None:
                module.bias -= module.bias.mean()


def rel_diff(a, b):
    return ((a - b).abs().max() / b.abs().max()).item()


def check_fold(name, make, args, foldable, extra_norm):
    """Fold per the verdict: unchanged. Also RMS an LN the verdict excludes: changed."""
    base = make()
    base.eval()
    with torch.no_grad():
        want = base(*args)
        folded = make()
        folded.load_state_dict(base.state_dict())
        for layer in folded.cbwc_layers():
            centre(layer)
        for i in foldable:
            folded.norms()[i].rms = True
        got = folded(*args)
        d = rel_diff(got, want)
        print(f"{name}: fold per the verdict ({len(foldable)} LNs, {len(folded.cbwc_layers())} "
              f"layers centred): max rel diff {d:.2e} (tolerance 1e-5)")
        if not d < 1e-5:
            return False
        if extra_norm is None:
            return True
        folded.norms()[extra_norm].rms = True
        d2 = rel_diff(folded(*args), want)
        print(f"{name}: also LN {extra_norm} -> RMSNorm (not foldable): max rel diff {d2:.2e} "
              f"(must exceed 1e-3)")
        return d2 > 1e-3


L = 2
idx = torch.randint(0, 64, (2, 16))
types = torch.randint(0, 2, (2, 16))
img = torch.randn(2, 3, 8, 8)

export(RefGPT(L), (idx,), "gpt_ref", 14, ["idx"])
expected.append(("gpt_ref", f"foldable: {2 * L + 1}/{2 * L + 1} LNs, cbwc layers: {2 * L + 2}"))
torch.manual_seed(1)
gpt = GPT(L=L)
for opset in (17, 14):
    export(gpt, (idx,), f"gpt_o{opset}", opset, ["idx"])
    expected.append((f"gpt_o{opset}", f"foldable: {2 * L + 1}/{2 * L + 1} LNs, cbwc layers: {2 * L + 2}"))
# batch and sequence axes symbolic: the shapes behind each reshape are computed in the graph
export(gpt, (idx,), "gpt_dyn", 17, ["idx"], dynamic=True)
expected.append(("gpt_dyn", f"foldable: {2 * L + 1}/{2 * L + 1} LNs, cbwc layers: {2 * L + 2}"))
torch.manual_seed(2)
bert = BERT(L=L)
for opset in (17, 14):
    export(bert, (idx, types), f"bert_o{opset}", opset, ["idx", "types"])
    expected.append((f"bert_o{opset}", f"foldable: 1/{2 * L + 2} LNs, cbwc layers: 3"))
torch.manual_seed(3)
vit = ViT(L=L)
for opset in (17, 14):
    export(vit, (img,), f"vit_o{opset}", opset, ["img"])
    expected.append((f"vit_o{opset}", f"foldable: {2 * L + 1}/{2 * L + 1} LNs, cbwc layers: {2 * L + 3}"))

torch.manual_seed(4)
opt_pre = OPT(pre_ln=True, L=L)
opt_post = OPT(pre_ln=False, E=16, L=L)
for opset in (17, 14):
    export(opt_pre, (idx,), f"opt125_o{opset}", opset, ["idx"])
    expected.append((f"opt125_o{opset}", f"foldable: {2 * L + 1}/{2 * L + 1} LNs, cbwc layers: {2 * L + 2}"))
    export(opt_post, (idx,), f"opt350_o{opset}", opset, ["idx"])
    expected.append((f"opt350_o{opset}", f"foldable: 0/{2 * L} LNs, cbwc layers: 0"))

# Swin (2 stages): without the centring ops the patch norm, the last stage's
# 4 block norms and the final norm fold (S = patch conv, the merge's
# reduction, stage 1's projs and fc2s); stage 0's norms read the patch norm's
# output, and centring stage 0 would shift what the merge's concat + LN read.
# With them all 11 fold, S = conv, stage 0's projs and fc2 but its last fc2
# (whose output reaches only the centring op), the reduction, stage 1's 4.
img16 = torch.randn(2, 2, 16, 16)
for opset in (17, 14):
    export(RefSwin(0), (img16,), f"swin_o{opset}", opset, ["img"])
    expected.append((f"swin_o{opset}", "foldable: 6/11 LNs, cbwc layers: 6"))
    export(RefSwin(1), (img16,), f"swinc_o{opset}", opset, ["img"])
    expected.append((f"swinc_o{opset}", "foldable: 11/11 LNs, cbwc layers: 9"))

with open(os.path.join(OUT, "expected.txt"), "w") as f:
    for name, line in expected:
        f.write(f"{name}\t{line}\n")

ok = check_fold("gpt", lambda: GPT(L=L), (idx,), range(2 * L + 1), extra_norm=None)
# for GPT every LN folds; the negative case: centre a layer outside S instead
with torch.no_grad():
    g2 = GPT(L=L)
    g2.load_state_dict(gpt.state_dict())
    centre(g2.blocks[0].mlp.fc)
    d = rel_diff(g2(idx), gpt(idx))
    print(f"gpt: centring mlp.fc (outside S) alone: max rel diff {d:.2e} (must exceed 1e-3)")
    ok = ok and d > 1e-3
ok = check_fold("bert", lambda: BERT(L=L), (idx, types), [0], extra_norm=1) and ok
ok = check_fold("opt125", lambda: OPT(pre_ln=True, L=L), (idx,), range(2 * L + 1), extra_norm=None) and ok
with torch.no_grad():  # outside S: layer 0's fc1 (it feeds the ReLU, not the stream)
    o2 = OPT(pre_ln=True, L=L)
    o2.load_state_dict(opt_pre.state_dict())
    centre(o2.layers[0].fc1)
    d = rel_diff(o2(idx), opt_pre(idx))
    print(f"opt125: centring layers.0.fc1 (outside S) alone: max rel diff {d:.2e} (must exceed 1e-3)")
    ok = ok and d > 1e-3
# post-LN: nothing folds; centring what would make LN 0's input zero-mean
# (project_in, the positions, layers.0.out_proj) already changes the outputs,
# because x0 also feeds q/k/v
with torch.no_grad():
    o3 = OPT(pre_ln=False, E=16, L=L)
    o3.load_state_dict(opt_post.state_dict())
    for layer in (o3.project_in, o3.embed_positions, o3.layers[0].self_attn.out_proj):
        centre(layer)
    d = rel_diff(o3(idx), opt_post(idx))
    print(f"opt350: centring project_in, the positions, layers.0.out_proj (LN 0's would-be set): "
          f"max rel diff {d:.2e} (must exceed 1e-3)")
    ok = ok and d > 1e-3

def swin_check(what, ln, other, must_match):
    with torch.no_grad():
        d = rel_diff(other(img16), ln(img16))
    limit = "tolerance 1e-5" if must_match else "must exceed 1e-3"
    print(f"swin: {what}: max rel diff {d:.2e} ({limit})")
    return d < 1e-5 if must_match else d > 1e-3


# swin.py's cbwc mode folds the verdict's 6 LNs and centres exactly its 6 layers
ok = swin_check("fold per the verdict (6 LNs, 6 layers centred)", RefSwin(0), RefSwin(0, "cbwc"), True) and ok
# outside S: stage 0's last fc2, whose per-token shift reaches the merge's
# concat + LN unnormalised (the merge LN's verdict)
ok = swin_check("centring layers.0.blocks.1.mlp.fc2 (outside S) alone", RefSwin(0),
                RefSwin(0, centred=["s0.b1.fc2"]), False) and ok
swin_s = ["patch", "s0.b0.proj", "s0.b0.fc2", "s0.b1.proj", "s1.red"] + [
    f"s1.b{i}.{m}" for i in (0, 1) for m in ("proj", "fc2")]
ok = swin_check("centring ops: every LN -> RMS, the verdict's 9 layers centred", RefSwin(1),
                RefSwin(1, "rms", swin_s), True) and ok
ok = swin_check("centring ops: the same without layers.0.blocks.0.attn.proj", RefSwin(1),
                RefSwin(1, "rms", [n for n in swin_s if n != "s0.b0.proj"]), False) and ok
sys.exit(0 if ok else 1)
