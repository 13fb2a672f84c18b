#!/usr/bin/python3
"""Draw how far ln == cbwc holds over training, from equivalence_steps' CSV.

    scripts/plot_equivalence.py diffs.csv -o equivalence.png

The CSV (bin/equivalence_steps, columns family,step,tensor,cbwc_vs_ln,
rms_vs_ln[,nudged_vs_ln]) holds max relative differences at log-spaced steps. One panel per
model family (two per row), both axes logarithmic: the logits and every parameter gradient
of cbwc against ln (thin lines, one per gradient tensor; the logits bold),
the rms control against ln (dashed: a different model), and, where the CSV
has it, ln started one ulp away against ln (grey dotted: the fp32 chaos
baseline, logits only). Prints per
family the largest cbwc-vs-ln difference and the smallest rms-vs-ln one.
Matplotlib (Debian python3-matplotlib), headless.
"""
import argparse
import csv
import os
import sys


def fail(msg):
    print(f"plot_equivalence: {msg}", file=sys.stderr)
    sys.exit(1)


def read_csv(path):
    """{family: {tensor: [(step, cbwc_vs_ln, rms_vs_ln, nudged_vs_ln or None), ...]}}."""
    data = {}
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError) as e:
        fail(f"{path}: cannot read: {e}")
    header = ["family", "step", "tensor", "cbwc_vs_ln", "rms_vs_ln"]
    if not rows or rows[0] not in (header, header + ["nudged_vs_ln"]):
        fail(f"{path}: not an equivalence_steps CSV (header {','.join(header)}[,nudged_vs_ln])")
    fields = len(rows[0])
    for number, row in enumerate(rows[1:], 2):
        if len(row) != fields:
            fail(f"{path}:{number}: expected {fields} fields, got {len(row)}")
        try:
            step, a, b = int(row[1]), float(row[3]), float(row[4])
            c = float(row[5]) if fields == 6 else None
        except ValueError:
            fail(f"{path}:{number}: step or difference is not a number: {row}")
        data.setdefault(row[0], {}).setdefault(row[2], []).append((step, a, b, c))
    if not data:
        fail(f"{path}: no rows")
    return data


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", nargs="+", help="equivalence_steps CSV files (their families are merged)")
    ap.add_argument("-o", "--output", default="equivalence.png", help="PNG to write")
    ap.add_argument("--title", default="", help="figure title")
    args = ap.parse_args()
    if not args.output.endswith(".png"):
        fail(f"-o must name a .png file, got {args.output}")
    data = {}
    for path in args.csv:
        data.update(read_csv(path))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    families = list(data)
    cols = min(len(families), 2)
    rows = (len(families) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.9 * rows), dpi=75, squeeze=False)
    for ax in axes.flat[len(families):]:
        ax.set_visible(False)
    floor = 1e-10  # an exact 0 drawn at the floor of the log axis
    for family, ax in zip(families, axes.flat):
        tensors = data[family]
        grads = [t for t in tensors if t not in ("logits", "loss")]
        for t in grads:
            steps = [p[0] for p in tensors[t]]
            ax.plot(steps, [max(p[1], floor) for p in tensors[t]], color="C0", lw=0.6, alpha=0.35)
            ax.plot(steps, [max(p[2], floor) for p in tensors[t]], color="C3", lw=0.6, alpha=0.25,
                    ls="--")
        if "logits" in tensors:
            steps = [p[0] for p in tensors["logits"]]
            ax.plot(steps, [max(p[1], floor) for p in tensors["logits"]], color="C0", lw=2.2,
                    label="cbwc vs ln: logits")
            ax.plot(steps, [max(p[2], floor) for p in tensors["logits"]], color="C3", lw=2.2,
                    ls="--", label="rms vs ln: logits")
            if tensors["logits"][0][3] is not None:
                ax.plot(steps, [max(p[3], floor) for p in tensors["logits"]], color="0.35",
                        lw=1.6, ls=":", label="ln vs ln one ulp away: logits")
        ax.plot([], [], color="C0", lw=0.6, label=f"cbwc vs ln: {len(grads)} gradients")
        ax.plot([], [], color="C3", lw=0.6, ls="--", label="rms vs ln: gradients")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("step")
        ax.set_ylabel("max |a - b| / max |b|")
        ax.set_title(family)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="center right")
        worst = max(p[1] for t in tensors if t != "loss" for p in tensors[t])
        control = min(p[2] for t in tensors if t != "loss" for p in tensors[t])
        last = max(p[0] for t in tensors for p in tensors[t])
        print(f"{family}: steps 1..{last}: max cbwc-vs-ln {worst:.2e}, min rms-vs-ln {control:.2e}")
    if args.title:
        fig.suptitle(args.title)
    fig.tight_layout()
    out_dir = os.path.dirname(args.output)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    tmp = args.output + ".tmp.png"
    fig.savefig(tmp)
    os.replace(tmp, args.output)  # no half-written PNG under the final name
    print(f"plot_equivalence: wrote {args.output} ({len(families)} families)")


if __name__ == "__main__":
    main()
