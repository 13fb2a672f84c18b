"""The emulated runs the check holds the model to: each an emulated program of
`make emu` (build/emu) run with EMU_TRAFFIC=1 at a small size, its traffic
table (stderr) kept in WORKDIR/NAME.log, and the model's calls of the same
program. Together they launch every GPT-2, ViT and Swin kernel of a training
step, each attention kind the emulator counts (tc causal and bidirectional,
tails and head sizes 16, 32 and 64; flash; cublas) and each norm mode."""

import os
import struct
import subprocess

import check as chk
import gpt2
import vision

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
EMU = os.path.join(ROOT, "build", "emu")
FMNIST = "/usr/share/datasets/fashion-mnist"
SHARD_TOKENS = 4096


def shard_tokens(vocab):
    """the token shard's tokens: every third token 0, the others a quadratic
    residue pattern (repeats, so the wte gradient's buckets are fewer than the
    rows, and token 0's bucket in a micro-batch of 99 rows or more exceeds the
    32-row pieces: the split path runs too)"""
    return [0 if i % 3 == 0 else (i * i + 3 * i) % min(61, vocab) for i in range(SHARD_TOKENS)]


def bucket_rows(tokens):
    """the row count of each token's bucket (token_buckets_build groups a
    micro-batch's rows by input token)"""
    counts = {}
    for t in tokens:
        counts[t] = counts.get(t, 0) + 1
    return list(counts.values())


def write_shard(path, tokens):
    """llm.c's token shard (docs/formats.md): 256 int32 header, uint16 tokens"""
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", 20240520, 1, len(tokens), *([0] * 253)))
        f.write(struct.pack("<%dH" % len(tokens), *tokens))


def gpt2_run(name, model, B, T, mode, kind, inference=0):
    s = gpt2.parse_descriptor(model)
    args = [os.path.join(EMU, "train_gpt2cu"), "-N", mode, "-e", model, "-b", str(B), "-t", str(T),
            "-at", kind]
    if inference:
        return (name, args + ["-inf", str(inference)],
                gpt2.inference_program(s, B, T, mode, kind, inference))
    # -sh 0: the first batch is the shard's first B T tokens (grouped by token: the buckets)
    buckets = bucket_rows(shard_tokens(s.V)[:B * T])
    args += ["-x", "1", "-v", "0", "-sh", "0", "-i", "{work}/tokens_*.bin"]
    return name, args, gpt2.train_program(s, B, T, mode, kind, buckets)


def vision_run(name, family, mode, kind, extra=()):
    """train_vitcu on Fashion-MNIST: one step of 8 images, then the 8 test images"""
    args = [os.path.join(EMU, "train_vitcu"), "-N", mode, "-i", FMNIST, "-b", "8", "-x", "1",
            "-nt", "8", "-ne", "8", "-at", kind]
    if family == "vit":
        s = vision.ViTShape(S=28, Cin=1, P=7, C=24, L=2, NH=3, R=4, K=10)
        return name, args + ["-C", "24", "-L", "2", "-H", "3", "-P", "7"], \
            vision.vit_train_program(s, 8, mode, kind, 1, [8])
    k = dict(extra)
    s = vision.SwinShape(S=28, Cin=1, P=2, E=16, depths=[2, 2], heads=[2, 4], W=7, R=2, K=10,
                         centre_ops=k.get("-K", 0), paper_variant=k.get("-pv", 0))
    flags = ["-e", "swin", "-E", "16", "-P", "2", "-W", "7"]
    for f, v in extra:
        flags += [f, str(v)]
    return name, args + flags, vision.swin_train_program(s, 8, mode, 1, [8])


def runs():
    return [
        gpt2_run("gpt2_ln_tc", "d1c128h2v256t64", 2, 64, "ln", "tc"),
        gpt2_run("gpt2_cbwc_tc_odd", "d2c96h3v301t64", 1, 40, "cbwc", "tc"),
        gpt2_run("gpt2_rms_flash", "d2c64h4v256t64", 2, 48, "rms", "flash"),
        gpt2_run("gpt2_ln_cublas", "d2c64h4v256t64", 2, 48, "ln", "cublas"),
        gpt2_run("gpt2_cbwc_tc_inference", "d2c64h4v256t64", 2, 48, "cbwc", "tc", inference=1),
        vision_run("vit_cbwc_tc", "vit", "cbwc", "tc"),
        vision_run("vit_ln_flash", "vit", "ln", "flash"),
        vision_run("vit_rms_cublas", "vit", "rms", "cublas"),
        vision_run("swin_ln_tc", "swin", "ln", "tc"),
        vision_run("swin_cbwc_tc_centre_ops", "swin", "cbwc", "tc", [("-K", 1)]),
    ]


def check(work, reuse=False):
    """runs (unless reuse) and compares every run; 0 when all agree"""
    os.makedirs(work, exist_ok=True)
    write_shard(os.path.join(work, "tokens_000.bin"), shard_tokens(256))
    env = dict(os.environ, EMU_TRAFFIC="1", EMU_RACECHECK="0")
    failed = 0
    unmodelled = set()  # kernels with counted shared traffic the model does not follow
    for name, args, calls in runs():
        log = os.path.join(work, name + ".log")
        args = [a.format(work=work) for a in args]
        if not reuse:
            with open(log, "w") as f:
                rc = subprocess.run(args, stdout=f, stderr=subprocess.STDOUT, env=env).returncode
            if rc != 0:
                print("FAIL %s: %s exited %d (%s)" % (name, " ".join(args), rc, log))
                failed += 1
                continue
        with open(log) as f:
            counted = chk.parse_traffic(f.read())
        if not counted:
            print("FAIL %s: no traffic table in %s (a SAN=1 build counts nothing)" % (name, log))
            failed += 1
            continue
        lines = []
        bad = chk.compare(calls, counted, out=lines.append)
        print("%s %s: %d kernels and library calls, %d differ from the model (%s)" % (
            "FAIL" if bad else "ok  ", name, len(lines), bad, os.path.basename(args[0])))
        for line in lines:
            if bad and line.startswith("FAIL"):
                print("     " + line)
            if "(not modelled)" in line:
                unmodelled.add(line.split()[1])
        failed += bad > 0
    print("shared memory compared for the kernels the model follows; counted but not modelled: %d "
          "kernels (%s)" % (len(unmodelled), ", ".join(sorted(unmodelled))))
    print("%d of %d runs differ from the model" % (failed, len(runs())))
    return 1 if failed else 0
