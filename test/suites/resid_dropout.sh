#!/usr/bin/env bash
# Residual dropout (train_gpt2 -rd, llmc/kernels/dropout.c): the forward, every
# gradient and 4 AdamW steps under dropout match the PyTorch reference, which
# redoes the masks from the documented hash (dev/reference/gpt2.py
# --resid-dropout), in modes ln and cbwc; another mask seed must fail (the
# masks are checked, not just the scale); with dropout cbwc is a different
# model from ln (docs/math.md section 6) while without it they are equal;
# the trainer evaluates without dropout and resumes with the same masks.
# Tolerances: test_gpt2's (1e-5 relative, 1e-4 absolute on the step losses).
# tier: check
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/resid_dropout
rm -rf "$work"; mkdir -p "$work"
PY=${PYTHON:-/usr/bin/python3}
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
echo "resid_dropout: seed $seed"
[ -x bin/test_gpt2 ] && [ -x bin/test_equivalence ] && [ -x bin/train_gpt2 ] ||
    make -s test_gpt2 test_equivalence train_gpt2
fails=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
p=0.$(( seed % 3 + 1 ))  # 0.1 .. 0.3

# 1. against PyTorch, a shared mask
for mode in ln cbwc; do
    $PY dev/reference/gpt2.py --mode $mode --seed $((seed + 1)) --steps 4 --resid-dropout $p \
        --dropout-seed $((seed + 2)) --model "$work/$mode.bin" --state "$work/$mode.state" \
        > "$work/ref_$mode.out" 2>&1 || { fail "$mode: reference"; tail -3 "$work/ref_$mode.out"; continue; }
    bin/test_gpt2 -rd $p -sd $((seed + 2)) "$work/$mode.bin" "$work/$mode.state" > "$work/test_$mode.out" 2>&1 &&
        ok "$mode: dropout $p: logits, loss, 16 gradients and 4 steps match PyTorch" ||
        { fail "$mode: dropout vs the reference"; grep -E 'FAIL' "$work/test_$mode.out" | head -4; }
    bin/test_gpt2 -rd $p -sd $((seed + 3)) "$work/$mode.bin" "$work/$mode.state" > "$work/wrong_$mode.out" 2>&1 &&
        fail "$mode: another mask seed passes too (the masks are not checked)" ||
        ok "$mode: another mask seed fails ($(grep -cE 'FAIL$' "$work/wrong_$mode.out") checks)"
done

# 2. ln == cbwc without dropout, != with it (same weights, same masks), 10
# AdamW steps at lr 3e-3. The rms control must differ from ln's loss by
# > 1e-3 (10x the equivalence tolerance): at lr 1e-3 it measured 1.27e-3 ..
# 7.8e-3 over 60 seeds, and 8.27e-4 at seed 247859127 (a failure, 2.5 sigma
# of its log-normal spread); at 3e-3 it measured 2.86e-3 .. 1.4e-2 (4.1
# sigma above 1e-3; 6.98e-3 at that seed), while ln - cbwc stayed <= 9.5e-7
# (tol 1e-4) and, with dropout, cbwc - ln >= 4.3e-2 in the logits (min 1e-3)
# and >= 9.1e-4 in the loss (min 1e-4). At 1e-2 ln - cbwc reached 2.2e-4:
# rounding grows too fast there. (60 seeds, docs/reliability.md.)
$PY dev/reference/gpt2.py --mode ln --seed $((seed + 4)) --model "$work/eq.bin" > /dev/null
for d in 0 $p; do
    bin/test_equivalence "$work/eq.bin" $((seed + 5)) 10 4 32 $d 3e-3 > "$work/eq_$d.out" 2>&1 &&
        ok "dropout $d: $(grep -E 'step 0 logits|loss over' "$work/eq_$d.out" | sed 's/^ *//' | tr '\n' ' ')" ||
        { fail "dropout $d: ln vs cbwc"; tail -3 "$work/eq_$d.out"; }
done

# 3. the trainer: eval without dropout (step 0 val equals a run without -rd),
# the train losses differ, and a resumed run redraws the same masks
data=(-e d2c64h4v256t64 -i "data/kjv/kjv_bytes_train_*.bin" -j "data/kjv/kjv_bytes_val_*.bin" -b 4 -t 32 -v 3 -m 2 -sd $seed)
scripts/prepare_kjv_bytes.sh > /dev/null
bin/train_gpt2 "${data[@]}" -x 6 -o "$work/plain" > /dev/null 2>&1 &&
    bin/train_gpt2 "${data[@]}" -x 6 -rd $p -o "$work/drop" > /dev/null 2>&1 &&
    bin/train_gpt2 "${data[@]}" -x 3 -n 3 -rd $p -o "$work/resumed" > /dev/null 2>&1 &&
    bin/train_gpt2 "${data[@]}" -x 6 -rd $p -y 1 -o "$work/resumed" > /dev/null 2>&1 ||
    fail "train_gpt2 -rd runs"
first() { grep -E "^s:$2 $3:" "$1/main.log" | head -1; }
[ -n "$(first "$work/plain" 0 tel)" ] && [ "$(first "$work/plain" 0 tel)" = "$(first "$work/drop" 0 tel)" ] &&
    ok "step 0 val loss without dropout: $(first "$work/drop" 0 tel)" || fail "eval used dropout"
[ -n "$(first "$work/plain" 1 trl)" ] && [ "$(first "$work/plain" 1 trl)" != "$(first "$work/drop" 1 trl)" ] &&
    ok "train loss with dropout differs: $(first "$work/drop" 1 trl | cut -d' ' -f2)" || fail "-rd changed no train loss"
diff <(grep -E '^s:[4-6] ' "$work/drop/main.log") <(grep -E '^s:[4-6] ' "$work/resumed/main.log") > /dev/null &&
    ok "resumed at step 3: steps 4-6 equal the uninterrupted run" || fail "resume with -rd differs"
grep -q 'resid_dropout=0.[123]' "$work/drop/main.log" && ok "run record names resid_dropout" || fail "run record lacks resid_dropout"
echo "$fails failed"
[ $fails -eq 0 ]
