#!/usr/bin/env bash
# bf16 mixed precision on the CPU (train_gpt2 -mp bf16, llmc/kernels/matmul_engine.c):
# oneDNN's bf16 matmul where this CPU has one (AVX-512), else the sgemm
# fallback on bf16-rounded inputs; FOLDNORM_BF16_MATMUL=sgemm forces it.
# 1. bin/test_matmul_bf16: the bf16 rounding, and the bf16 matmul forward,
#    dinp, dweight, dbias of each engine here against a double reference of
#    the rounded inputs and against the fp32 matmul, and the engines against
#    each other (tolerances and their derivation in test/test_matmul_bf16.c);
# 2. a small GPT-2 (d2c64h4v256t64, B=4 T=32, 200 AdamW steps at lr 1e-3 on
#    this repository's sources, byte tokens) in bf16 against fp32 from the
#    same seed, and 3. ln against cbwc, both in bf16. Tolerances on the loss
#    curves: steps 1-30 within 0.03 each (bf16 moves the logits by ~2^-8
#    relative before the runs decorrelate; measured max 0.0012 over seeds
#    1-39 on the sgemm fallback; on oneDNN's bf16 engine (AVX-512 Xeon,
#    2026-12-02) ln vs cbwc median 0.0003, max 0.0010 over -sd 3-50, but
#    0.0105 at -sd 630 (CI seed 550341629), where the two trajectories part
#    early: a heavy tail, so the bound is ~3x that worst seed; a real ln/cbwc
#    or bf16 error moves step 0 alone by more, and the step-0 logits check
#    below holds that to 1e-2 relative);
#    the means over each 20 steps within 0.1 (~3.5 % of the loss; measured
#    max 0.028 bf16 vs fp32 and 0.018 ln vs cbwc over seeds 1-39: the
#    trajectories drift apart by chaos, not bias; the step-to-step loss noise
#    is ~0.35); bf16's loss must fall from > 5 to < 3.5. ln vs cbwc uses the
#    same tolerance: cbwc's V = W - colmean(W) and ln's W round to bf16 with
#    the same relative error 2^-8, and the mean the centring removes is what
#    ln's LayerNorm removes anyway, so the two differ by rounding of the same
#    size as bf16 vs fp32 (in fp32 they agree to 2e-4 over 200 steps);
#    the oneDNN and sgemm engines (where both run) are held to the same
#    curve tolerance; forcing oneDNN where it has no bf16 matmul is refused
#    naming AVX-512 (and this part prints SKIP);
#    3b. the same with a negative control (test_equivalence -mp bf16);
# 4. a build without oneDNN (build/nodnnl/train_gpt2, mk/dnnl.mk) does not
#    link libdnnl, runs -mp bf16 on the fallback with the oneDNN build's
#    forced-fallback losses, and trains in fp32 exactly as the oneDNN build
#    does.
# Not in the fast tier: 5 runs of 200 steps.
set -uo pipefail
cd "$(dirname "$0")/../.."
. test/suite_outcome.sh
work=${1:-$(mktemp -d)}/cpu_bf16
rm -rf "$work"; mkdir -p "$work"
PY=${PYTHON:-/usr/bin/python3}
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
echo "cpu_bf16: seed $seed"
# make cpu builds them all (build/nodnnl/train_gpt2 too, with the same flags)
[ -x bin/test_matmul_bf16 ] && [ -x bin/train_gpt2 ] && [ -x bin/text_to_shard ] &&
    [ -x bin/test_equivalence ] && [ -x build/nodnnl/train_gpt2 ] ||
    make -s test_matmul_bf16 train_gpt2 text_to_shard test_equivalence build/nodnnl/train_gpt2
fails=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# 1. the matmuls
if bin/test_matmul_bf16 $((seed % 1000000)) > "$work/matmul.out" 2>&1; then
    ok "test_matmul_bf16: $(tail -2 "$work/matmul.out" | head -1)"
else
    fail "test_matmul_bf16"; grep -E 'FAIL|error' "$work/matmul.out" | head -5
fi

# 2. and 3. training curves
cat llmc/*/*.c llmc/*/*.h train_gpt2.c > "$work/text.txt"
bin/text_to_shard "$work/text.txt" "$work/src" 0.1 > /dev/null || exit 1
train() { # NAME MODE PRECISION [BINARY]
    "${4:-bin/train_gpt2}" -N $2 -mp $3 -e d2c64h4v256t64 -i "$work/src_train_*.bin" \
        -j "$work/src_val_*.bin" -b 4 -t 32 -x 200 -v 0 -l 1e-3 -sd $((seed % 1000 + 1)) \
        -o "$work/$1" > "$work/$1.out" 2>&1
}
for run in ln_fp32:ln:fp32 ln_bf16:ln:bf16 cbwc_bf16:cbwc:bf16; do
    IFS=: read -r name mode precision <<< "$run"
    train $name $mode $precision || { fail "$name: train_gpt2 failed"; tail -3 "$work/$name.out"; }
done
FOLDNORM_BF16_MATMUL=sgemm train ln_bf16_sgemm ln bf16 ||
    { fail "ln_bf16_sgemm: train_gpt2 failed"; tail -3 "$work/ln_bf16_sgemm.out"; }
grep -q 'matmul=bf16' "$work/ln_bf16/main.log" || fail "ln_bf16: the run record does not say matmul=bf16"
engine=$(sed -n 's/^# config:.* matmul_engine=\([a-z]*\).*/\1/p' "$work/ln_bf16/main.log")
echo "bf16 engine here: $engine ($(grep -o 'matmul bf16 ([^|]*' "$work/ln_bf16.out"))"
grep -q 'matmul bf16 (sgemm' "$work/ln_bf16_sgemm.out" &&
    grep -q 'matmul_engine=sgemm' "$work/ln_bf16_sgemm/main.log" &&
    ok "FOLDNORM_BF16_MATMUL=sgemm: the run line and record name the fallback" ||
    fail "FOLDNORM_BF16_MATMUL=sgemm: $(grep -m1 'matmul' "$work/ln_bf16_sgemm.out")"
# forcing oneDNN: runs where it has a bf16 matmul, else is refused naming the
# CPU feature and the alternatives (SKIP: this CPU cannot run that engine)
FOLDNORM_BF16_MATMUL=onednn bin/train_gpt2 -mp bf16 -e d2c64h4v256t64 -i "$work/src_train_*.bin" \
    -v 0 -x 1 > "$work/force_onednn.out" 2>&1
rc=$?
if [ "$engine" = onednn ]; then
    [ $rc -eq 0 ] && ok "FOLDNORM_BF16_MATMUL=onednn runs (oneDNN has a bf16 matmul here)" ||
        fail "FOLDNORM_BF16_MATMUL=onednn: exit $rc: $(tail -1 "$work/force_onednn.out")"
else
    [ $rc -ne 0 ] && grep -q 'AVX-512' "$work/force_onednn.out" && grep -q -- '-mp fp32' "$work/force_onednn.out" &&
        grep -q 'FOLDNORM_BF16_MATMUL' "$work/force_onednn.out" &&
        ok "FOLDNORM_BF16_MATMUL=onednn is refused naming AVX-512, the fallback and -mp fp32" ||
        fail "FOLDNORM_BF16_MATMUL=onednn without oneDNN's bf16: exit $rc: $(tail -1 "$work/force_onednn.out")"
    skip_part "oneDNN bf16 engine: $(grep -o 'oneDNN [0-9.]* has no bf16 matmul[^)]*)' "$work/force_onednn.out" | head -1)"
fi
compare_curves() { # WHAT A B
    $PY - "$work/$2/main.log" "$work/$3/main.log" "$1" <<'PYEOF'
import re, sys
def losses(path):
    return [float(x) for x in re.findall(r'^s:\d+ trl:([0-9.]+)', open(path).read(), re.M)]
a, b, what = losses(sys.argv[1]), losses(sys.argv[2]), sys.argv[3]
if len(a) != 200 or len(b) != 200:
    print(f"FAIL {what}: expected 200 loss lines, got {len(a)} and {len(b)}"); sys.exit(1)
early = max(abs(x - y) for x, y in zip(a[:30], b[:30]))
windows = max(abs(sum(a[i:i + 20]) - sum(b[i:i + 20])) / 20 for i in range(0, 200, 20))
good = early <= 0.03 and windows <= 0.1 and a[0] > 5 and b[0] > 5 and \
    sum(a[-20:]) / 20 < 3.5 and sum(b[-20:]) / 20 < 3.5
print(f"{'ok  ' if good else 'FAIL'} {what}: steps 1-30 max |diff| {early:.4f} (<= 0.03), "
      f"20-step means max |diff| {windows:.4f} (<= 0.1), loss {a[0]:.3f} -> "
      f"{sum(a[-20:]) / 20:.3f} vs {b[0]:.3f} -> {sum(b[-20:]) / 20:.3f}")
sys.exit(0 if good else 1)
PYEOF
}
compare_curves "ln bf16 vs fp32" ln_fp32 ln_bf16 || fails=$((fails + 1))
compare_curves "bf16 ln vs cbwc" ln_bf16 cbwc_bf16 || fails=$((fails + 1))
# the two engines: the same arithmetic in another summation order, so their
# curves differ like any two orders do (and not at all where both are sgemm)
if [ "$engine" = onednn ]; then
    compare_curves "bf16 oneDNN vs sgemm fallback" ln_bf16 ln_bf16_sgemm || fails=$((fails + 1))
else
    diff <(grep '^s:' "$work/ln_bf16/main.log") <(grep '^s:' "$work/ln_bf16_sgemm/main.log") > /dev/null &&
        ok "bf16 auto (the fallback here) equals FOLDNORM_BF16_MATMUL=sgemm bit for bit" ||
        fail "bf16 auto and FOLDNORM_BF16_MATMUL=sgemm differ, though both are the fallback"
fi

# 3b. LN == CBWC+RMS in bf16 with a negative control: test_equivalence -mp bf16
# (tolerances in test/test_equivalence.c) from PyTorch-written weights, where
# rms differs from ln by far more than bf16 rounding (in the 200-step curves
# above rms stays within the curve tolerance: their small random init keeps
# the residual stream nearly centred)
$PY dev/reference/gpt2.py --mode ln --seed $((seed % 100000 + 2)) --model "$work/eq.bin" > /dev/null
if bin/test_equivalence -mp bf16 "$work/eq.bin" $((seed % 100000 + 3)) 60 > "$work/eq.out" 2>&1; then
    ok "bf16 ln == cbwc, rms differs: $(grep -E 'step 0 logits' "$work/eq.out" | sed 's/^ *//')"
else
    fail "test_equivalence -mp bf16"; cat "$work/eq.out"
fi

# 4. without oneDNN: -mp bf16 takes the sgemm fallback, with the same losses
# as the oneDNN build's forced fallback (the same code). Without AVX-512 the
# oneDNN build sends narrow fp32 layers to oneDNN (another summation order);
# FOLDNORM_FP32_ONEDNN=0 gives it the other build's routes, so the runs
# compared here must be equal bit for bit on every CPU
FOLDNORM_FP32_ONEDNN=0 FOLDNORM_BF16_MATMUL=sgemm train ln_bf16_sgemm_nofp32dnnl ln bf16 ||
    { fail "ln_bf16_sgemm_nofp32dnnl: train_gpt2 failed"; tail -3 "$work/ln_bf16_sgemm_nofp32dnnl.out"; }
FOLDNORM_FP32_ONEDNN=0 train ln_fp32_nofp32dnnl ln fp32 ||
    { fail "ln_fp32_nofp32dnnl: train_gpt2 failed"; tail -3 "$work/ln_fp32_nofp32dnnl.out"; }
nodnnl=build/nodnnl/train_gpt2
if ldd $nodnnl | grep -q libdnnl; then
    fail "$nodnnl links libdnnl"
else
    ok "$nodnnl does not link libdnnl"
fi
train nodnnl_bf16 ln bf16 $nodnnl || { fail "nodnnl_bf16: train_gpt2 failed"; tail -3 "$work/nodnnl_bf16.out"; }
if grep -q 'matmul bf16 (sgemm' "$work/nodnnl_bf16.out" &&
    diff <(grep '^s:' "$work/ln_bf16_sgemm_nofp32dnnl/main.log") <(grep '^s:' "$work/nodnnl_bf16/main.log") > /dev/null; then
    ok "without oneDNN -mp bf16 runs the fallback, losses equal the oneDNN build's FOLDNORM_BF16_MATMUL=sgemm (FOLDNORM_FP32_ONEDNN=0)"
else
    fail "without oneDNN -mp bf16: $(grep -m1 'matmul' "$work/nodnnl_bf16.out")"
fi
train nodnnl_fp32 ln fp32 $nodnnl || fail "nodnnl_fp32: train_gpt2 failed"
if diff <(grep '^s:' "$work/ln_fp32_nofp32dnnl/main.log") <(grep '^s:' "$work/nodnnl_fp32/main.log") > /dev/null; then
    ok "without oneDNN the fp32 losses equal the oneDNN build's (FOLDNORM_FP32_ONEDNN=0)"
else
    fail "without oneDNN the fp32 losses differ from the oneDNN build's"
fi
suite_exit $fails
