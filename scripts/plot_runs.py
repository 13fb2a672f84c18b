#!/usr/bin/python3
"""Draw the train and validation loss curves of any foldnorm (or llm.c) main.log.

    scripts/plot_runs.py out/ln out/rms out/cbwc -o curves.png
    scripts/plot_runs.py out/exp/gpt/*_seed* --group -o gpt.png

Each argument is a run directory holding main.log, or a main.log itself. The
log lines are llm.c's: `s:STEP trl:LOSS ...` (train) and `s:STEP tel:LOSS`
(validation), and train_vit's test accuracy `s:STEP tea:ACC` as a third
panel; a step logged twice (a resumed run appends) keeps its last value.
The run record at the top of a foldnorm main.log (`# config: mode=M seed=S
...`) puts each run's mode and seed in the legend.
--group merges runs named NAME_seedN into one curve per NAME: the mean over
seeds, with the min-max band, so seed-to-seed spread is visible beside the
differences between modes. Matplotlib (Debian python3-matplotlib), headless.
"""
import argparse
import os
import re
import sys

LINE = re.compile(r"^s:(\d+)((?: \w+:\S+)+)\s*$")


def fail(msg):
    print(f"plot_runs: {msg}", file=sys.stderr)
    sys.exit(1)


CONFIG = re.compile(r"^# config: (.*)$")


def read_log(path):
    """Returns {key: {step: value}} for the keys trl, tel and tea (test accuracy),
    and "config": the key=value words of the run record's first config line."""
    series = {"trl": {}, "tel": {}, "tea": {}}
    config = {}
    try:
        with open(path, encoding="utf-8", errors="strict") as f:
            lines = f.readlines()
    except (OSError, UnicodeDecodeError) as e:
        fail(f"{path}: cannot read: {e}")
    for number, line in enumerate(lines, 1):
        if not line.startswith("s:"):
            m = CONFIG.match(line)
            if m and not config:  # a resumed run's lines come later: the first record holds
                config = dict(w.partition("=")[::2] for w in m.group(1).split() if "=" in w)
            continue  # other lines (a run record, comments) are not curve points
        m = LINE.match(line)
        if not m:
            fail(f"{path}:{number}: malformed log line: {line.strip()[:80]!r}")
        step = int(m.group(1))
        for field in m.group(2).split():
            key, _, value = field.partition(":")
            if key not in series:
                continue
            try:
                v = float(value)
            except ValueError:
                fail(f"{path}:{number}: {key} is not a number: {value!r}")
            series[key][step] = v
    if not any(series.values()):
        fail(f"{path}: no 's:STEP trl:LOSS' or 's:STEP tel:LOSS' lines: not a main.log")
    series["config"] = config
    return series


def log_path(arg):
    path = os.path.join(arg, "main.log") if os.path.isdir(arg) else arg
    if not os.path.isfile(path):
        fail(f"{arg}: no such main.log")
    return path


def run_name(arg):
    arg = arg.rstrip("/")
    if os.path.basename(arg) == "main.log":
        arg = os.path.dirname(arg) or "."
    return os.path.basename(os.path.abspath(arg))


def smooth(values, alpha):
    """Exponential moving average with bias correction (as TensorBoard shows)."""
    out, acc = [], 0.0
    for i, v in enumerate(values):
        acc = alpha * acc + (1 - alpha) * v
        out.append(acc / (1 - alpha ** (i + 1)))
    return out


def group_runs(runs):
    """{name: [series...]} with NAME_seedN merged into NAME."""
    groups = {}
    for name, series in runs:
        key = re.sub(r"_seed\d+$", "", name)
        groups.setdefault(key, []).append(series)
    return groups


def legend(name, series_list):
    """NAME (mode M, seed S) from the run records; grouped: the seeds listed."""
    modes = sorted({s["config"].get("mode") for s in series_list} - {None})
    seeds = sorted({s["config"].get("seed") for s in series_list} - {None}, key=lambda v: (len(v), v))
    parts = [f"mode {'/'.join(modes)}"] if modes else []
    if seeds:
        parts.append(f"seed{'s' if len(seeds) > 1 else ''} {','.join(seeds)}")
    if len(series_list) > 1:
        parts.append(f"n={len(series_list)}")
    return f"{name} ({', '.join(parts)})" if parts else name


def mean_band(series_list, key):
    """Steps present in every run, with mean, min and max there."""
    steps = sorted(set.intersection(*(set(s[key]) for s in series_list)))
    values = [[s[key][t] for s in series_list] for t in steps]
    return (steps, [sum(v) / len(v) for v in values], [min(v) for v in values],
            [max(v) for v in values])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", help="run directories (holding main.log) or main.log files")
    ap.add_argument("-o", "--output", default="curves.png", help="PNG to write (default curves.png)")
    ap.add_argument("--group", action="store_true", help="merge NAME_seedN runs: mean and min-max band")
    ap.add_argument("--smooth", type=float, default=0.0,
                    help="EMA factor in [0, 1) for the train curve (default 0: raw)")
    ap.add_argument("--logy", action="store_true", help="logarithmic loss axis")
    ap.add_argument("--title", default="", help="figure title")
    args = ap.parse_args()
    if not 0.0 <= args.smooth < 1.0:
        fail(f"--smooth must be in [0, 1), got {args.smooth}")
    if not args.output.endswith(".png"):
        fail(f"-o must name a .png file, got {args.output}")

    runs = [(run_name(a), read_log(log_path(a))) for a in args.runs]
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("trl", "train loss"), ("tel", "validation loss")]
    if any(series["tea"] for _, series in runs):  # train_vit logs test accuracy too
        panels.append(("tea", "test accuracy"))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), dpi=100)
    groups = group_runs(runs) if args.group else {n: [s] for n, s in runs}
    labels = [legend(name, series_list) for name, series_list in sorted(groups.items())]
    for (key, label), ax in zip(panels, axes):
        for i, (name, series_list) in enumerate(sorted(groups.items())):
            color = f"C{i % 10}"
            steps, mean, lo, hi = mean_band(series_list, key)
            if not steps:
                continue
            shown = smooth(mean, args.smooth) if key == "trl" and args.smooth > 0 else mean
            tag = legend(name, series_list)
            few = len(steps) < 3 and len(series_list) > 1  # e.g. one test at the end of one epoch
            if few:  # min-max bars, each group shifted a little so that the bars stay apart
                shift = (i - (len(groups) - 1) / 2) * 0.015 * max(max(steps), 1)
                steps = [s + shift for s in steps]
                ax.errorbar(steps, shown, yerr=[[m - l for m, l in zip(shown, lo)], [h - m for m, h in zip(shown, hi)]],
                            fmt="none", ecolor=color, capsize=4, lw=1.2)
            # dashes cycle too: identical curves (ln and cbwc are the same model) stay visible
            ax.plot(steps, shown, color=color, lw=1.2, label=tag, ls=("-", "--", ":", "-.")[i % 4],
                    marker="o" if key in ("tel", "tea") and len(steps) < 40 else None, ms=3)
            if len(series_list) > 1 and not few:
                ax.fill_between(steps, lo, hi, color=color, alpha=0.18, lw=0)
        ax.set_title(label)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        if args.logy and key != "tea":
            ax.set_yscale("log")
        if ax.lines:
            ax.legend(fontsize=8)
        else:
            ax.text(0.5, 0.5, "no points", ha="center", va="center", transform=ax.transAxes)
    if args.title:
        fig.suptitle(args.title)
    fig.tight_layout()
    out_dir = os.path.dirname(args.output)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    tmp = args.output + ".tmp.png"
    fig.savefig(tmp)
    os.replace(tmp, args.output)  # no half-written PNG under the final name
    print(f"plot_runs: wrote {args.output} ({len(runs)} runs): " + "; ".join(labels))


if __name__ == "__main__":
    main()
