"""llm.c's learning-rate schedules (-k, llm.c/llmc/schedulers.h) as PyTorch
LambdaLR multipliers, written from their definitions, compared with the lr
of every step that bin/test_schedule prints for the same flags.

    lr_schedule.py TEST_SCHEDULE [--tol T] 'FLAGS' ...   exit 0: every step of every run within T

T is relative to -l (the C side rounds each lr to float32 once: half an ulp,
< 6e-8 of -l; the negative control printed, the schedule one step late (for
constant: cosine), is off by 1e-3 or more in test/suites/lr_schedule.sh's runs).
"""
import argparse
import math
import subprocess
import sys

import numpy as np
import torch


def multiplier(kind, warmup, steps, final, decay_fraction):
    """The lr at step s as a fraction of the peak, as llm.c defines it."""
    # llm.c's decay point of wsd is taken in float32: (int)(0.8f * steps)
    decay_start = int(np.float32(np.float32(1.0) - np.float32(decay_fraction)) * np.float32(steps))

    def warm(s):
        return (s + 1) / warmup

    def cosine(s):
        if s < warmup:
            return warm(s)
        if steps <= warmup:
            return 1.0
        r = min(1.0, (s - warmup) / (steps - warmup))
        return final + 0.5 * (1.0 + math.cos(math.pi * r)) * (1.0 - final)

    def linear(s):
        if s < warmup:
            return warm(s)
        if steps <= warmup:
            return 1.0
        r = min(1.0, (s - warmup) / (steps - warmup))
        return 1.0 - r * (1.0 - final)

    def wsd(s):
        if s < warmup:
            return warm(s)
        if s < decay_start or steps <= decay_start:
            return 1.0
        r = min(1.0, (s - decay_start) / (steps - decay_start))
        return final + (1.0 - math.sqrt(r)) * (1.0 - final)

    return {"cosine": cosine, "linear": linear, "constant": lambda s: 1.0, "wsd": wsd}[kind]


def torch_lrs(kind, lr, warmup, steps, final, decay_fraction):
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, multiplier(kind, warmup, steps, final, decay_fraction))
    lrs = []
    for _ in range(steps):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return lrs


def check(program, flags, tol):
    """Compares one run's lrs with LambdaLR's; True when within tol."""
    opts = dict(zip(flags[::2], flags[1::2]))
    kind = opts.get("-k", "cosine")
    lr = float(np.float32(opts.get("-l", "3e-4")))  # the trainer holds -l as a float
    warmup = int(opts.get("-u", "0"))
    steps = int(opts.get("-x", "100"))
    final = float(opts.get("-q", "1.0"))
    decay_fraction = float(opts.get("-kd", "0.2"))
    out = subprocess.run([program] + flags, check=True, capture_output=True, text=True).stdout
    ours = [float(line.split()[1]) for line in out.splitlines()]
    if len(ours) != steps:
        print(f"FAIL {' '.join(flags)}: {len(ours)} lines, expected {steps}")
        return False
    ref = torch_lrs(kind, lr, warmup, steps, final, decay_fraction)
    worst = max(abs(o - r) / lr for o, r in zip(ours, ref))
    # negative control: the schedule a step late (constant: cosine, what an ignored -k gives)
    if kind == "constant":
        other, control = torch_lrs("cosine", lr, warmup, steps, final, decay_fraction), "cosine"
    else:
        other, control = [ref[0]] + ref[:-1], "one step late"
    off = max(abs(o - r) / lr for o, r in zip(ours, other))
    ok = worst <= tol and off > tol  # NaN fails both
    print(f"{'ok  ' if ok else 'FAIL'} {' '.join(flags)}: max |lr - LambdaLR| / -l = {worst:.2e} "
          f"(tolerance {tol:g}); against {control}: {off:.2e}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("program")
    ap.add_argument("--tol", type=float, default=1e-7)
    ap.add_argument("runs", nargs="+", help="one run's flags each, e.g. '-k wsd -x 500'")
    a = ap.parse_args()
    results = [check(a.program, run.split(), a.tol) for run in a.runs]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
