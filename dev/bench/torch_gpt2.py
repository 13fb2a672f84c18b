#!/usr/bin/python3
"""PyTorch GPT-2 training steps in the style of nanoGPT, the PyTorch side of
make bench's d12 comparison (dev/bench/bench.sh, docs/performance.md).

A plain nn.Module GPT-2 (nn.Embedding, nn.LayerNorm, nn.Linear, tanh GELU,
causal attention with a mask since torch 1.13 has no fused attention on the
CPU, the LM head tied to the token embedding, vocabulary padded to 50304),
trained with torch.optim.AdamW (weight decay on the matrices, lr 3e-4,
betas 0.9/0.95, eps 1e-8) and gradient clipping at 1.0 as our train_gpt2.
Batches come in order from llm.c token shards (magic 20240520, uint16
tokens). Prints one line a step as llm.c does:
    step N: train loss L (took X ms)
so that bench.sh reads all three programs alike. Only torch and numpy.
"""

import argparse
import glob
import math
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SHARD_MAGIC = 20240520
SHARD_HEADER_INTS = 256


class Block(nn.Module):
    def __init__(self, C, NH, maxT):
        super().__init__()
        self.NH = NH
        self.ln1 = nn.LayerNorm(C)
        self.qkv = nn.Linear(C, 3 * C)
        self.attproj = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C)
        self.fc = nn.Linear(C, 4 * C)
        self.fcproj = nn.Linear(4 * C, C)
        mask = torch.tril(torch.ones(maxT, maxT, dtype=torch.bool))
        self.register_buffer("mask", mask.view(1, 1, maxT, maxT), persistent=False)

    def attention(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.NH, C // self.NH).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(~self.mask[:, :, :T, :T], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.attproj(y)

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, L, C, NH, Vp, maxT):
        super().__init__()
        self.wte = nn.Embedding(Vp, C)
        self.wpe = nn.Embedding(maxT, C)
        self.blocks = nn.ModuleList(Block(C, NH, maxT) for _ in range(L))
        self.lnf = nn.LayerNorm(C)
        # GPT-2 init: N(0, 0.02), residual projections N(0, 0.02 / sqrt(2L)), biases 0
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif "ln" in name:
                nn.init.ones_(p)
            else:
                std = 0.02 / math.sqrt(2 * L) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx, targets, V):
        T = idx.size(1)
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for block in self.blocks:
            x = block(x)
        logits = self.lnf(x) @ self.wte.weight.t()  # tied head
        return F.cross_entropy(logits[:, :, :V].reshape(-1, V), targets.reshape(-1))


def read_tokens(pattern):
    files = sorted(glob.glob(pattern))
    if not files:
        sys.exit(f"error: no token shard matches {pattern}")
    parts = []
    for path in files:
        header = np.fromfile(path, dtype=np.int32, count=SHARD_HEADER_INTS)
        if header.size != SHARD_HEADER_INTS or header[0] != SHARD_MAGIC:
            sys.exit(f"error: {path}: not an llm.c token shard (magic {SHARD_MAGIC})")
        tokens = np.fromfile(path, dtype=np.uint16, offset=SHARD_HEADER_INTS * 4)
        if tokens.size != header[2]:
            sys.exit(f"error: {path}: header says {header[2]} tokens, file holds {tokens.size}")
        parts.append(tokens)
    return np.concatenate(parts).astype(np.int64)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-i", "--train", required=True, help="glob of llm.c token shards")
    p.add_argument("--L", type=int, default=12)
    p.add_argument("--C", type=int, default=768)
    p.add_argument("--NH", type=int, default=12)
    p.add_argument("--V", type=int, default=50257)
    p.add_argument("--Vp", type=int, default=50304)
    p.add_argument("--maxT", type=int, default=1024)
    p.add_argument("--B", type=int, default=4)
    p.add_argument("--T", type=int, default=64)
    p.add_argument("--steps", type=int, default=10, help="training steps, all printed")
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    a = p.parse_args()
    if not (0 < a.T <= a.maxT and 0 < a.V <= a.Vp and a.C % a.NH == 0 and a.steps > 0):
        sys.exit("error: need 0 < T <= maxT, 0 < V <= Vp, C % NH == 0, steps > 0")
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    tokens = read_tokens(a.train)
    need = a.B * a.T + 1
    if tokens.size < need or tokens.max() >= a.V:
        sys.exit(f"error: {a.train}: need {need} tokens below V = {a.V}")
    model = GPT(a.L, a.C, a.NH, a.Vp, a.maxT)
    decay = [q for q in model.parameters() if q.dim() >= 2]
    no_decay = [q for q in model.parameters() if q.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.95), eps=1e-8)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{sum(q.numel() for q in model.parameters())} parameters", flush=True)
    pos = 0
    for step in range(a.steps):
        if pos + need > tokens.size:
            pos = 0
        chunk = torch.from_numpy(tokens[pos:pos + need])
        pos += a.B * a.T
        x, y = chunk[:-1].view(a.B, a.T), chunk[1:].view(a.B, a.T)
        t0 = time.perf_counter()
        loss = model(x, y, a.V)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        ms = (time.perf_counter() - t0) * 1e3
        print(f"step {step}: train loss {loss.item():.6f} (took {ms:.3f} ms)", flush=True)


if __name__ == "__main__":
    main()
