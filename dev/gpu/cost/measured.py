"""Measured beside predicted: the RESULT lines the dev/cuda programs print on a
device (dev/gpu/check.sh collects them in results.txt) next to the model's
roofline of the same calls at the same shape. One line a timing, for
check.sh's "kernel timings" stage; a shape the model does not know is left out."""

import re

import attention
import kernels as k
import vision
from calls import total_seconds


def _fields(line):
    return dict((a, int(b)) for a, b in re.findall(r"\b([A-Za-z_]+)=(\d+)", line))


def _times(line):
    """the ms figures in order (fwd, bwd, or one)"""
    return [float(x) for x in re.findall(r"([0-9.]+) ms", line)]


def predictions(line):
    """[(label, measured ms, predicted ms)] of one RESULT line"""
    parts = line.split()
    if len(parts) < 3 or parts[0] != "RESULT" or "bf16" not in parts:
        return []  # the model is of the bf16 build
    f, ms, what = _fields(line), _times(line), parts[1]
    pred = None
    if what == "matmul" and ms[:2]:
        N, IC, OC = f["N"], f["IC"], f["OC"]
        label = "matmul N=%d IC=%d OC=%d" % (N, IC, OC)
        pred = [k.matmul_forward("m", N, IC, OC), k.matmul_backward("m", N, IC, OC)]
    elif what in ("layernorm", "rmsnorm"):
        N, C, layer = f["N"], f["C"], what == "layernorm"
        label = "%s N=%d C=%d" % (what, N, C)
        pred = [[k.norm_forward(N, C, layer, True, "n")], k.norm_backward(N, C, layer, "n")]
    elif what == "attention_variants" or what == "attention_bidir":
        kind = parts[2]
        if kind not in attention.KINDS:
            return []
        B, T, C, NH = f["B"], f["T"], f["C"], f["NH"]
        causal = what == "attention_variants"
        label = "%s %s B=%d T=%d C=%d NH=%d" % (what, kind, B, T, C, NH)
        pred = [attention.layer(kind, B, T, C, NH, causal, True),
                attention.layer(kind, B, T, C, NH, causal, False)]
    elif what == "swin_window_attention_tc":
        B, res, W, shift, C, NH = f["B"], f["res"], f["W"], f["shift"], f["C"], f["NH"]
        label = "%s B=%d res=%d W=%d C=%d NH=%d" % (what, B, res, W, C, NH)
        pred = [[vision.swin_tc_forward(B, res, W, shift, C, NH)],
                vision.swin_tc_backward(B, res, W, shift, C, NH)]
    elif what == "cbwc_project":
        L, OC, IC = f["L"], f["OC"], f["IC"]
        label = "cbwc_project L=%d OC=%d IC=%d" % (L, OC, IC)
        pred = [[k.cbwc_project(L, OC, IC, False, "p"), k.cbwc_centre_bias(L, OC, "p")]]
    elif what == "adamw_cbwc_project":
        L, OC, IC = f["L"], f["OC"], f["IC"]
        label = "adamw_cbwc_project L=%d OC=%d IC=%d" % (L, OC, IC)
        pred = [[k.cbwc_project(L, OC, IC, True, "p")]]
    elif what == "centre_rows":
        label = "centre_rows N=%d C=%d" % (f["N"], f["C"])
        pred = [[k.centre_rows(f["N"], f["C"], "c")]]
    elif what == "swin_patch_merge":
        B, r, C = f["B"], f["res_out"], f["C"]
        n = B * r * r * 4 * C
        label = "swin_patch_merge B=%d res_out=%d C=%d" % (B, r, C)
        one = k.Call("swin_patch_merge", "m", k.XB * n, k.XB * n, 2 * k.XB * n)
        pred = [[one], [one]]
    if pred is None or len(ms) < len(pred):
        return []
    names = ["fwd", "bwd"] if len(pred) == 2 else [""]
    return [(("%s %s" % (label, n)).strip(), m, total_seconds(p) * 1e3)
            for n, m, p in zip(names, ms, pred)]


def main(path):
    with open(path) as f:
        lines = f.read().splitlines()
    for line in lines:
        for label, got, want in predictions(line):
            print("%s: measured %.3f ms, predicted %.3f ms (H200 roofline), %.2fx" % (
                label, got, want, got / want if want > 0 else float("nan")))
    return 0
