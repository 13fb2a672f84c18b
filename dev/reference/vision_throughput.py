#!/usr/bin/python3
"""PyTorch training throughput of the same ViT / Swin as train_vit, for the
side-by-side comparison in scripts/vit_bench.sh (docs/performance.md).

Builds the model with the reference code (vit.py / swin.py: same parameter
layout and math as the C code), then times full training steps (forward,
backward, clip, AdamW) on random 28x28 grey batches and prints the median
images/s over the timed steps (and the median of process CPU time, which
counts every thread):  "torch: family F mode M images_per_s X ... cpu_images_per_s Y".
Give it the same threads (--threads) as OMP_NUM_THREADS for the C code, and
set OPENBLAS_NUM_THREADS too: OpenBLAS's pthread build keeps its own pool
of one thread per core whatever torch.set_num_threads says.
"""

import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swin  # noqa: E402
import vit  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--family", choices=("vit", "swin"), required=True)
    p.add_argument("--mode", choices=("ln", "rms", "cbwc"), required=True)
    p.add_argument("--B", type=int, default=128)
    p.add_argument("--steps", type=int, default=10, help="timed steps (after 2 warm-up steps)")
    p.add_argument("--threads", type=int, default=2)
    # the train_vit defaults
    p.add_argument("--channels", type=int, default=64)
    p.add_argument("--num-layers", type=int, default=4)
    p.add_argument("--num-heads", type=int, default=4)
    p.add_argument("--patch-size", type=int, default=None, help="default 7 (vit), 2 (swin)")
    p.add_argument("--embed-dim", type=int, default=32)
    p.add_argument("--depths", type=swin.int_list, default=[2, 2])
    p.add_argument("--heads", type=swin.int_list, default=[2, 4])
    p.add_argument("--window", type=int, default=7)
    p.add_argument("--centre-ops", type=int, default=0)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    gen = torch.Generator().manual_seed(0)
    if a.family == "vit":
        cfg = dict(image_size=28, image_channels=1, patch_size=a.patch_size or 7, num_classes=10,
                   channels=a.channels, num_layers=a.num_layers, num_heads=a.num_heads, mlp_ratio=4)
        P = vit.init_params(cfg, gen)
        names = list(vit.NAMES)
        forward = lambda x, y: vit.vit_forward(P, cfg, a.mode, x, y, 0.1)
    else:
        cfg = dict(image_size=28, image_channels=1, patch_size=a.patch_size or 2, num_classes=10,
                   embed_dim=a.embed_dim, num_stages=len(a.depths), depths=a.depths,
                   heads=a.heads, window=a.window, mlp_ratio=2, centre_ops=a.centre_ops)
        arch = swin.Arch(cfg)
        P = swin.init_params(arch, gen)
        names = [n for n, _, _ in arch.tensors]
        forward = lambda x, y: swin.swin_forward(P, arch, a.mode, x, y, 0.1)
    params = [P[n] for n in names]
    opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.05)
    x = torch.randn((a.B, 1, 28, 28), generator=gen)
    y = torch.randint(0, 10, (a.B,), generator=gen)
    times, cpu_times = [], []
    for step in range(a.steps + 2):
        t0, c0 = time.perf_counter(), time.process_time()
        opt.zero_grad(set_to_none=True)
        _, loss = forward(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        if step >= 2:
            times.append(time.perf_counter() - t0)
            cpu_times.append(time.process_time() - c0)
    print(f"torch: family {a.family} mode {a.mode} images_per_s {a.B / statistics.median(times):.1f}"
          f" threads {a.threads} B {a.B} steps {a.steps}"
          f" cpu_images_per_s {a.B / statistics.median(cpu_times):.1f}")


if __name__ == "__main__":
    main()
