"""Stochastic depth for the references (vit.py, swin.py), as timm's DropPath
with Swin's linear rule: block i of n drops each branch (attention, MLP) of
each sample with probability torch.linspace(0, rate, n)[i], a kept branch
scaled by 1 / (1 - p). The scales (B, n, 2) are drawn here with torch's
generator and written for test_vit -dp, which applies the same ones."""

import numpy as np
import torch


def draw(B, n, rate, gen):
    rates = torch.linspace(0, rate, n) if n > 1 else torch.zeros(1)
    keep = (1 - rates).view(1, n, 1).expand(B, n, 2)
    return torch.bernoulli(keep.contiguous(), generator=gen) / keep


def write(path, scales):
    with open(path, "wb") as f:
        f.write(np.asarray(scales, dtype="<f4").tobytes())
