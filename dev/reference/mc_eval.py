"""Writes a multiple-choice eval file in llm.c's format (docs/formats.md; the
layout of write_evalfile in llm.c/dev/data/data_common.py, written here from
its description) with random examples, and scores them with the PyTorch
reference GPT-2 (dev/reference/gpt2.py) as llm.c scores: the completion of
lowest mean token loss is the answer.

    mc_eval.py MODEL.bin OUT.bin [--examples N] [--seed S] [--labels right|wrong]

--labels right: each label is the completion PyTorch scores best, so a
trainer that scores as llm.c must report accuracy 1; wrong: the next
completion, accuracy 0. Examples whose two best completions lie within 1e-3
in mean loss are left out (fp32 sums in another order could swap them; the
C and PyTorch losses agree to ~1e-6, test/suites/reference.sh). It also
prints how many kept examples lie within BF16_GAP (0.25) of a tie: a bf16
trainer's mean losses may swap those (8-bit mantissas in the logits).
"""
import argparse
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2  # noqa: E402  (the reference model)


def mean_losses(model, context, completions):
    """The mean token loss of each completion after the context."""
    out = []
    for comp in completions:
        row = context + comp
        x = torch.tensor([row[:-1]], dtype=torch.long)
        y = torch.tensor([[-1] * (len(context) - 1) + comp], dtype=torch.long)
        with torch.no_grad():
            logits, _ = model(x, y)
        logp = torch.log_softmax(logits[0].double(), dim=-1)
        losses = [-logp[t, y[0, t]].item() for t in range(len(context) - 1, len(row) - 1)]
        out.append(sum(losses) / len(losses))
    return out


BF16_GAP = 0.25


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--examples", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--labels", choices=("right", "wrong"), default="right")
    a = ap.parse_args()
    cfg, mode, params = gpt2.read_model(a.model)
    model = gpt2.GPT(cfg["V"], cfg["Vp"], cfg["maxT"], cfg["L"], cfg["NH"], cfg["C"], mode)
    with torch.no_grad():
        for name, p in model.params():
            p.copy_(torch.from_numpy(params[name]))
    rng = np.random.default_rng(a.seed)
    stream, longest, kept, skipped, bf16_near = [], 0, 0, 0, 0
    while kept < a.examples:
        context = [int(t) for t in rng.integers(0, cfg["V"], rng.integers(1, 12))]
        completions = [[int(t) for t in rng.integers(0, cfg["V"], rng.integers(1, 6))]
                       for _ in range(4)]
        scores = mean_losses(model, context, completions)
        best = int(np.argmin(scores))
        gap = sorted(scores)[1] - scores[best]
        if not gap > 1e-3:
            skipped += 1
            continue
        bf16_near += gap <= BF16_GAP
        label = best if a.labels == "right" else (best + 1) % 4
        ex = [65535, 0, kept, label, 4, len(context)] + context
        for comp in completions:
            ex += [len(comp)] + comp
        ex[1] = 2 * len(ex)
        longest = max(longest, ex[1])
        stream += ex
        kept += 1
    header = [20240522, 1, kept, longest] + [0] * 252
    with open(a.out, "wb") as f:
        f.write(struct.pack("<256i", *header))
        f.write(np.array(stream, dtype="<u2").tobytes())
    print(f"{a.out}: {kept} examples, labels {a.labels} ({skipped} near ties left out)")
    print(f"bf16 near ties: {bf16_near}")


if __name__ == "__main__":
    main()
