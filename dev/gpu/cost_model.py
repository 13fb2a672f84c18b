#!/usr/bin/env python3
"""A cost model of one training step on an H200 (issue 27): every kernel and
library call of GPT-2 (dev/gpu/cost/gpt2.py), ViT and Swin (cost/vision.py),
with the bytes it moves, the FLOPs it does and on which unit, and its
roofline time (cost/calls.py). The bytes issued are held to the emulator's
counts by `check`; the roofline uses the bytes once (see calls.py).

  cost_model.py [report]            d12 before/after issue 36 by part, per-call table,
                                    step times, MFU (llm.c's convention), cbwc/ln,
                                    ViT-Tiny and Swin-Tiny, folded vs LN inference
  cost_model.py calls [--model d12] [-b 16] [-t 1024] [-N ln] [-at tc] [--forward]
                                    every role of one GPT-2 step
  cost_model.py check WORKDIR [--reuse]
                                    emulated runs (build/emu) with EMU_TRAFFIC=1, each
                                    kernel's counted launches, bytes read and written,
                                    mma and GEMM FLOPs against the model; --reuse
                                    compares the logs already in WORKDIR
  cost_model.py measured RESULTS    measured vs predicted for the RESULT lines of the
                                    dev/cuda programs (dev/gpu/check.sh's hook)
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "cost"))

import attention  # noqa: E402
import calls as C  # noqa: E402
import gpt2  # noqa: E402
import report  # noqa: E402
import vision  # noqa: E402

D12_B, D12_T, D12_BUCKETS = 16, 1024, 5000  # distinct tokens of a 16k-token batch of text (estimate)
TARGET_STEP_MS, TARGET_ATTENTION_MS = 28.0, 3.0  # issue 36: d12 bf16 B=16 T=1024 -at tc


def before_after_section(out=print):
    """issue 36: the d12 ln tc step by part under issue 27's calibration and
    this one, the MFU in llm.c's convention, and the issue's targets"""
    s = gpt2.parse_descriptor("d12")
    cs = gpt2.train_step(s, D12_B, D12_T, "ln", "tc", D12_BUCKETS)
    was = C.calibration
    C.use_calibration("issue27")
    before, t_before = report.step_parts(cs), C.total_seconds(cs)
    C.use_calibration(was)
    after, t_after = report.step_parts(cs), C.total_seconds(cs)
    flops, flops12 = gpt2.model_flops(s, D12_B, D12_T), gpt2.model_flops_12lct(s, D12_B, D12_T)
    out("## d12 bf16 B=%d T=%d ln -at tc: before (issue 27's model) and after (issue 36's)\n"
        % (D12_B, D12_T))
    out("| part | launches | before ms | after ms |")
    out("| --- | ---: | ---: | ---: |")
    for label, _ in report.STEP_PARTS:
        (b, n), (a, _n) = before[label], after[label]
        if n:
            out("| %s | %d | %.3f | %.3f |" % (label, n, b * 1e3, a * 1e3))
    launches = sum(c.launches for c in cs)
    out("| **step** | %d | **%.2f** | **%.2f** |" % (launches, t_before * 1e3, t_after * 1e3))
    floor = [c for c in cs if max(c.unit_seconds(), key=c.unit_seconds().get) == "latency"]
    out("\nof which launch gaps %.2f ms (%d launches x %.0f us, both); %d launches are latency-bound "
        "after (%s): %.2f ms with their gaps" % (
            launches * C.LAUNCH_S * 1e3, launches, C.LAUNCH_S * 1e6,
            sum(c.launches for c in floor), ", ".join(sorted(set(c.name for c in floor))),
            C.total_seconds(floor) * 1e3))
    out("\nMFU in llm.c's convention (train_gpt2.cu gpt2_estimate_mfu: (6 N + 6 L C T) B T = %.2f "
        "TFLOP a step, over %.1f TFLOP/s): before %.1f %%, after %.1f %%; with issue 27's "
        "(6 N + 12 L C T) B T = %.2f TFLOP: before %.1f %%, after %.1f %%" % (
            flops / 1e12, C.PEAK_BF16 / 1e12, 100 * flops / t_before / C.PEAK_BF16,
            100 * flops / t_after / C.PEAK_BF16, flops12 / 1e12,
            100 * flops12 / t_before / C.PEAK_BF16, 100 * flops12 / t_after / C.PEAK_BF16))
    out("\n### the tensor-core attention kernels after (12 layers): each unit's time\n")
    out("| kernel | mma.sync ms (%.0f TFLOP/s) | shared ms (%.1f TB/s) | HBM ms | fp32 ms | bound | ms |"
        % (C.MMA_SYNC_FLOPS / 1e12, C.SMEM_BYTES / 1e12))
    out("| --- | ---: | ---: | ---: | ---: | --- | ---: |")
    att = [c for c in cs if c.what.startswith("attention")]
    for name in sorted(set(c.name for c in att)):
        ks = [c for c in att if c.name == name]
        u = dict((k, sum(c.unit_seconds()[k] for c in ks) * 1e3) for k in ks[0].unit_seconds())
        out("| `%s` | %.3f | %.3f | %.3f | %.3f | %s | %.3f |" % (
            name, u["tensor"], u["smem"], u["hbm"], u["fma"], ks[0].bound(),
            C.total_seconds(ks) * 1e3))
    serial = sum(c.launches * C.LAUNCH_S + max(c.unit_seconds()["tensor"] + c.unit_seconds()["smem"],
                                               c.unit_seconds()["hbm"]) for c in att)
    out("\nthe roofline takes the slowest unit, as if ldmatrix and mma.sync overlapped perfectly; "
        "with none (each warp's B fragment loaded, then used: shared + mma.sync time) attention "
        "would take %.2f ms. Neither counts occupancy (at D = 64: the forward's 2 blocks of 4 warps "
        "an SM at ~220 registers, the backward's 2 of 8 at 128), barriers, or how much of a tile's "
        "cp.async load hides behind the previous tile's work" % (serial * 1e3))
    mma_s = sum(c.unit_seconds()["tensor"] for c in att)
    out("the attention's mma.sync work alone (%.2f TFLOP at %.0f TFLOP/s) takes %.2f ms: the floor "
        "of mma.sync kernels under this calibration" % (
            sum(c.mma for c in att) * C.MMA_FLOPS / 1e12, C.MMA_SYNC_FLOPS / 1e12, mma_s * 1e3))
    attn = after["attention fwd"][0] + after["attention bwd"][0]
    out("\nissue 36's targets: step %.2f ms (target <= %.0f): %s; attention fwd + bwd %.2f ms "
        "(target <= %.0f): %s" % (
            t_after * 1e3, TARGET_STEP_MS, "meets" if t_after * 1e3 <= TARGET_STEP_MS else "MISSES",
            attn * 1e3, TARGET_ATTENTION_MS, "meets" if attn * 1e3 <= TARGET_ATTENTION_MS else "MISSES"))
    if attn * 1e3 > TARGET_ATTENTION_MS:
        worst = max(set(c.name for c in att), key=lambda n: C.total_seconds([c for c in att if c.name == n]))
        ks = [c for c in att if c.name == worst]
        out("the part that misses: attention, the kernels as written; the slowest is `%s` at %.2f ms, "
            "bound by %s" % (worst, C.total_seconds(ks) * 1e3, ks[0].bound()))
    out("")


def d12_section(out=print):
    s = gpt2.parse_descriptor("d12")
    flops = gpt2.model_flops(s, D12_B, D12_T)
    tokens = D12_B * D12_T
    out("## GPT-2 d12, bf16, B=%d T=%d, one step (no gradient accumulation)\n" % (D12_B, D12_T))
    out("N = %d parameters; model FLOPs a step in llm.c's convention (6 N + 6 L C T) B T = %.2f "
        "TFLOP; MFU = that / (predicted step time x %.1f TFLOP/s)\n" % (
            s.params, flops / 1e12, C.PEAK_BF16 / 1e12))
    times = {}
    for kind in ("tc", "flash", "cublas", "cudnn"):
        for mode in ("ln", "cbwc", "rms"):
            cs = gpt2.train_step(s, D12_B, D12_T, mode, kind, D12_BUCKETS)
            times[kind, mode] = C.total_seconds(cs)
            out("- " + report.summary_line("%s %s" % (mode, kind), cs, flops, tokens))
    out("")
    for kind in ("tc", "flash"):
        out("cbwc / ln (%s): %.4f (issued bytes: %.4f)" % (
            kind, times[kind, "cbwc"] / times[kind, "ln"],
            C.total_seconds(gpt2.train_step(s, D12_B, D12_T, "cbwc", kind, D12_BUCKETS), True) /
            C.total_seconds(gpt2.train_step(s, D12_B, D12_T, "ln", kind, D12_BUCKETS), True)))
    out("\n### ln, tc: the calls (merged by role over the layers), slowest first\n")
    report.call_table(gpt2.train_step(s, D12_B, D12_T, "ln", "tc", D12_BUCKETS), top=25, out=out)
    cb = [c for c in gpt2.train_step(s, D12_B, D12_T, "cbwc", "tc", D12_BUCKETS)
          if "cbwc" in c.what or c.name == "residual_norm_forward_kernel<false>"
          or c.name == "norm_backward_kernel<false>"]
    out("\n### cbwc's own calls (tc), and its RMS norms in place of LN\n")
    report.call_table(cb, out=out)
    out("\n### attention of the step by kind (12 layers, forward + backward)\n")
    out("| kind | roofline ms | bound | tensor FLOP | fp32 FLOP | bytes once | bytes issued |")
    out("| --- | ---: | --- | ---: | ---: | ---: | ---: |")
    for kind in ("tc", "flash", "cublas", "cudnn"):
        cs = []
        for fwd in (True, False):
            cs += attention.layer(kind, D12_B, D12_T, s.C, s.NH, True, fwd)
        t = report.totals(cs)
        bounds = sorted(set(c.bound() for c in cs))
        out("| %s | %.3f | %s | %s | %s | %s | %s |" % (
            kind, 12 * t["seconds"] * 1e3, "/".join(bounds), report.fmt_flops(12 * t["tensor"]),
            report.fmt_flops(12 * t["fma"]), report.fmt_bytes(12 * t["unique"]),
            report.fmt_bytes(12 * t["issued"])))


def vision_section(out=print, B=128):
    out("\n## ViT-Tiny and Swin-Tiny at 224, bf16, B=%d, K=1000, tc attention, one step\n" % B)
    vt = vision.ViTShape()
    sw = vision.SwinShape()
    for mode in ("ln", "cbwc"):
        cs = vision.vit_train_step(vt, B, mode, "tc")
        out("- " + report.summary_line("ViT-Tiny %s" % mode, cs, tokens=B, unit="images"))
    for mode in ("ln", "cbwc"):
        cs = vision.swin_train_step(sw, B, mode)
        out("- " + report.summary_line("Swin-Tiny %s" % mode, cs, tokens=B, unit="images"))
    out("\n### Swin-Tiny ln: the slowest roles\n")
    report.call_table(vision.swin_train_step(sw, B, "ln"), top=10, out=out)


def inference_section(out=print):
    out("\n## Folded (rms kernels) vs LN inference, d12, bf16, tc, forward only, B T = 16384\n")
    out("| T | B | LN ms | folded ms | folded / LN | LN norms ms | LN ms (issued) | folded ms (issued) "
        "| folded / LN (issued) |")
    out("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for T in (1024, 2048, 4096, 8192, 16384):
        B = 16384 // T
        s = gpt2.parse_descriptor("d12t%d" % T)
        ln = gpt2.forward(s, B, T, "ln", "tc", targets=False)
        rms = gpt2.forward(s, B, T, "rms", "tc", targets=False)
        norms = [c for c in ln if c.name.startswith("residual_norm")]
        a, b = C.total_seconds(ln), C.total_seconds(rms)
        ai, bi = C.total_seconds(ln, True), C.total_seconds(rms, True)
        out("| %d | %d | %.3f | %.3f | %.4f | %.3f | %.3f | %.3f | %.4f |" % (
            T, B, a * 1e3, b * 1e3, b / a, C.total_seconds(norms) * 1e3, ai * 1e3, bi * 1e3, bi / ai))


def calls_command(argv):
    import argparse
    p = argparse.ArgumentParser(prog="cost_model.py calls")
    p.add_argument("--model", default="d12")
    p.add_argument("-b", type=int, default=D12_B)
    p.add_argument("-t", type=int, default=D12_T)
    p.add_argument("-N", default="ln", choices=("ln", "rms", "cbwc"))
    p.add_argument("-at", default="tc", choices=("tc", "flash", "cublas", "cudnn"))
    p.add_argument("--buckets", type=int, default=D12_BUCKETS)
    p.add_argument("--forward", action="store_true", help="forward only (inference)")
    a = p.parse_args(argv)
    s = gpt2.parse_descriptor(a.model)
    if a.forward:
        cs = gpt2.forward(s, a.b, a.t, a.N, a.at, targets=False)
        print(report.summary_line("%s forward %s %s" % (a.model, a.N, a.at), cs, tokens=a.b * a.t))
    else:
        cs = gpt2.train_step(s, a.b, a.t, a.N, a.at, a.buckets)
        print(report.summary_line("%s step %s %s" % (a.model, a.N, a.at), cs,
                                  gpt2.model_flops(s, a.b, a.t), a.b * a.t))
    report.call_table(cs)
    return 0


def main(argv):
    cmd = argv[0] if argv else "report"
    if cmd == "report":
        print("# H200 roofline: bf16 tensor %.0f TFLOP/s (cuBLASLt), mma.sync %.0f TFLOP/s "
              "(FlashAttention-2 on H100), fp32 FMA %.0f TFLOP/s, exp %.0f G/s, HBM %.1f TB/s "
              "(bytes once), shared memory %.2f TB/s (132 SMs x 128 B/clock x 1.98 GHz), "
              "%.0f us a launch + a %.0f us latency floor\n" % (
                  C.TENSOR_FLOPS / 1e12, C.MMA_SYNC_FLOPS / 1e12, C.FMA_FLOPS / 1e12,
                  C.SFU_OPS / 1e9, C.HBM_BYTES / 1e12, C.SMEM_BYTES / 1e12, C.LAUNCH_S * 1e6,
                  C.KERNEL_MIN_S * 1e6))
        before_after_section()
        d12_section()
        vision_section()
        inference_section()
        return 0
    if cmd == "calls":
        return calls_command(argv[1:])
    if cmd == "check":
        if len(argv) < 2:
            print(__doc__)
            return 2
        import emulated  # the check's runs (build/emu)
        return emulated.check(argv[1], reuse="--reuse" in argv[2:])
    if cmd == "measured":
        if len(argv) != 2:
            print(__doc__)
            return 2
        import measured  # check.sh's hook
        return measured.main(argv[1])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
