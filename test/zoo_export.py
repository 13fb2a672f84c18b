#!/usr/bin/env python3
"""Exports a torchvision model-zoo network (random init) to ONNX, opset 17,
as a new user would: torch.onnx.export of the module in eval mode.

usage: zoo_export.py NAME OUT.onnx [--image N]
  NAME: vit_b_16, swin_t or convnext_tiny. --image: the input's side in
  pixels (default 224; smaller keeps the export fast, the graph's ops are
  the same; ViT needs a multiple of 16, Swin of 32).
Exit 77 (SKIP) when torchvision is not installed."""
import argparse
import sys
import time

try:
    import torch
    import torchvision
except ImportError as e:
    print(f"SKIP: torchvision not installed ({e}); scripts/deps/onnx.txt lists python3-torchvision")
    sys.exit(77)

p = argparse.ArgumentParser()
p.add_argument("name", choices=["vit_b_16", "swin_t", "convnext_tiny"])
p.add_argument("out")
p.add_argument("--image", type=int, default=224)
p.add_argument("--seed", type=int, default=0)
a = p.parse_args()
torch.manual_seed(a.seed)
kwargs = {"image_size": a.image} if a.name == "vit_b_16" else {}
model = getattr(torchvision.models, a.name)(weights=None, **kwargs).eval()
x = torch.randn(1, 3, a.image, a.image)
t0 = time.time()
torch.onnx.export(model, (x,), a.out, opset_version=17, input_names=["image"],
                  output_names=["logits"])
print(f"{a.name}: exported to {a.out} in {time.time() - t0:.1f} s (image {a.image})")
