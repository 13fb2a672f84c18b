#!/usr/bin/python3
"""Draw the speed study's ratios, from study.sh speed's summary.csv.

    scripts/plot_speed.py out/exp/speed/summary.csv -o speed.png

The CSV (columns part,config,ln,other_mode,other,unit,speedup; speedup =
ln / other, so above 1 means faster than ln) holds the norm kernels per
N x C shape (rms vs ln: fwd, bwd, fwd+bwd), the training step per model
(rms and cbwc vs ln) and forward-only inference per B and T (folded vs ln).
Three panels: grouped bars for the norms and the step, lines over T for the
inference. Matplotlib (Debian python3-matplotlib), headless.
"""
import argparse
import csv
import os
import sys


def fail(msg):
    print(f"plot_speed: {msg}", file=sys.stderr)
    sys.exit(1)


HEADER = ["part", "config", "ln", "other_mode", "other", "unit", "speedup"]


def read_rows(path):
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError) as e:
        fail(f"{path}: cannot read: {e}")
    if not rows or rows[0] != HEADER:
        fail(f"{path}: not a speed summary (header {','.join(HEADER)})")
    out = []
    for number, row in enumerate(rows[1:], 2):
        if len(row) != len(HEADER):
            fail(f"{path}:{number}: expected {len(HEADER)} fields, got {len(row)}")
        r = dict(zip(HEADER, row))
        try:
            for key in ("ln", "other", "speedup"):
                r[key] = float(r[key])
        except ValueError:
            fail(f"{path}:{number}: a time or ratio is not a number: {row}")
        out.append(r)
    if not out:
        fail(f"{path}: no rows")
    return out


def bars(ax, groups, series, values, title):
    """Grouped bars: values[(group, series)] -> speedup."""
    width = 0.8 / max(1, len(series))
    for i, name in enumerate(series):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, [values.get((grp, name), 0.0) for grp in groups], width, label=name)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("speedup over ln (ln time / time)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("csv")
    p.add_argument("-o", "--output", required=True, help="PNG to write")
    p.add_argument("--title", default="speed")
    args = p.parse_args()
    rows = read_rows(args.csv)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    norm = [r for r in rows if r["part"].startswith("norm ")]
    shapes = list(dict.fromkeys(r["config"] for r in norm))
    bars(axes[0], shapes, ["norm fwd", "norm bwd", "norm fwd+bwd"],
         {(r["config"], r["part"]): r["speedup"] for r in norm}, "RMSNorm vs LayerNorm kernels (N x C)")
    step = [r for r in rows if r["part"] == "train step"]
    models = list(dict.fromkeys(r["config"] for r in step))
    bars(axes[1], models, ["rms", "cbwc"], {(r["config"], r["other_mode"]): r["speedup"] for r in step},
         "training step vs ln")
    inf = [r for r in rows if r["part"] == "inference"]
    by_batch = {}
    for r in inf:
        b, t = r["config"].split()
        by_batch.setdefault(b, []).append((int(t.split("=")[1]), r["speedup"]))
    for b, pts in by_batch.items():
        pts.sort()
        axes[2].plot([t for t, _ in pts], [s for _, s in pts], marker="o", label=b)
    axes[2].axhline(1.0, color="grey", linewidth=0.8)
    axes[2].set_xscale("log", base=2)
    axes[2].set_xlabel("T")
    axes[2].set_ylabel("speedup over ln")
    axes[2].set_title("forward only: folded vs ln", fontsize=10)
    axes[2].legend(fontsize=8)
    fig.suptitle(args.title)
    fig.tight_layout()
    tmp = args.output + ".tmp.png"
    fig.savefig(tmp, dpi=80)
    os.replace(tmp, args.output)
    print(f"plot_speed: wrote {args.output}")


if __name__ == "__main__":
    main()
