"""The model's tables: per-call rooflines, step totals, MFU (markdown)."""

from calls import LAUNCH_S, PEAK_BF16, group, total_seconds


def fmt_bytes(n):
    return "%.3f G" % (n / 1e9) if n >= 1e7 else "%.2f M" % (n / 1e6)


def fmt_flops(n):
    return "%.2f T" % (n / 1e12) if n >= 1e10 else ("%.2f G" % (n / 1e9) if n else "0")


def totals(calls):
    return {"seconds": total_seconds(calls), "issued_seconds": total_seconds(calls, issued=True),
            "launches": sum(c.launches for c in calls), "tensor": sum(c.tensor for c in calls),
            "fma": sum(c.fma for c in calls), "unique": sum(c.unique for c in calls),
            "issued": sum(c.read + c.written for c in calls)}


def call_table(calls, top=None, out=print):
    """one row a role (calls merged by `what`), slowest first"""
    rows = sorted(group(calls, lambda c: (c.what, c.name)).values(), key=lambda g: -g["seconds"])
    step = total_seconds(calls)
    out("| call | kernel / library | launches | tensor FLOP | fp32 FLOP | bytes once | bytes issued "
        "| bound | roofline ms | share |")
    out("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
    shown = rows if top is None else rows[:top]
    for g in shown:
        out("| %s | `%s` | %d | %s | %s | %s | %s | %s | %.3f | %.1f %% |" % (
            g["what"], g["name"], g["launches"], fmt_flops(g["tensor"]), fmt_flops(g["fma"]),
            fmt_bytes(g["unique"]), fmt_bytes(g["read"] + g["written"]), "/".join(sorted(g["bounds"])),
            g["seconds"] * 1e3, 100 * g["seconds"] / step))
    if top is not None and len(rows) > top:
        rest = rows[top:]
        s = sum(g["seconds"] for g in rest)
        out("| (%d more roles) | | %d | | | | | | %.3f | %.1f %% |" % (
            len(rest), sum(g["launches"] for g in rest), s * 1e3, 100 * s / step))


def summary_line(label, calls, model_flops=None, tokens=None, unit="tok"):
    t = totals(calls)
    s = t["seconds"]
    parts = ["%s: %.2f ms" % (label, s * 1e3), "(issued bytes: %.2f ms)" % (t["issued_seconds"] * 1e3),
             "%d launches (%.2f ms of launch cost)" % (t["launches"], t["launches"] * LAUNCH_S * 1e3),
             "tensor %s" % fmt_flops(t["tensor"]), "bytes once %s" % fmt_bytes(t["unique"])]
    if tokens:
        parts.append("%.0f %s/s" % (tokens / s, unit))
    if model_flops:
        parts.append("MFU %.1f %% (llm.c's 6 N + 6 L C T)" % (100 * model_flops / s / PEAK_BF16))
    return ", ".join(parts)


# the parts of a GPT-2 step for the before/after table: (label, test of a call), first match
STEP_PARTS = [
    ("attention fwd", lambda c: c.what.startswith("attention fwd")),
    ("attention bwd", lambda c: c.what.startswith("attention bwd")),
    ("matmuls (cuBLASLt)", lambda c: c.name == "cublasLtMatmul"),
    ("GELU fwd + bwd", lambda c: c.name.startswith("gelu_")),
    ("norms fwd + bwd (with partials)", lambda c: "norm" in c.name and "sum_of" not in c.name),
    ("bias gradients (column sums; -fe 1: the epilogues' adds)",
     lambda c: c.name.startswith(("column_sum", "float_segments"))),
    ("cross-entropy and loss", lambda c: c.name in ("crossentropy_kernel", "loss_mean_kernel")),
    ("embedding fwd + bwd", lambda c: c.name.startswith("encoder_")),
    ("grad norm, clip, AdamW", lambda c: c.name.startswith(("sum_of_squares", "adamw", "clip",
                                                            "step_loss", "cbwc_project_kernel<true"))),
    ("memsets", lambda c: c.name == "cudaMemsetAsync"),
    ("other (cbwc)", lambda c: True),
]


def step_parts(calls):
    """{part: (seconds, launches)} of a step's calls by STEP_PARTS, in order"""
    out = dict((label, [0.0, 0]) for label, _ in STEP_PARTS)
    for c in calls:
        for label, test in STEP_PARTS:
            if test(c):
                out[label][0] += c.seconds()
                out[label][1] += c.launches
                break
    return out
