#!/usr/bin/env bash
# bin/fold: folded GPT-2 models give the ln model's logits and loss (against the
# PyTorch reference's state of the ln model), the same logits on real KJV
# tokens and the same 100 greedy tokens, for random small models and for a
# checkpoint trained here by train_gpt2 -N ln; bad input gives clear errors.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/fold_gpt2
mkdir -p "$work"
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
echo "fold_gpt2: seed $seed"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
PY=${PYTHON:-/usr/bin/python3}
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
run() { # NAME COMMAND...: passes when the command exits 0; its output indented
    local name=$1; shift
    if "$@" > "$work/$name.log" 2>&1; then ok "$name"; else bad "$name"; fi
    sed 's/^/     /' "$work/$name.log"
}
scripts/prepare_kjv_bytes.sh > /dev/null || { echo "FAIL prepare_kjv_bytes.sh"; exit 1; }
val=data/kjv/kjv_bytes_val_000000.bin
ntok=$(( ($(stat -c %s $val) - 1024) / 2 ))

# 1. random small models: logits and loss vs the reference state of the ln model
i=0
for shape in "--L 2 --C 64 --NH 4 --V 256 --Vp 256 --maxT 64 --B 2 --T 32" \
             "--L 3 --C 96 --NH 6 --V 256 --Vp 384 --maxT 48 --B 3 --T 48 --init gpt2"; do
    i=$((i + 1)); s=$(( (seed + 100 * i) % 1000000 ))
    $PY dev/reference/gpt2.py --mode ln --seed $s $shape --model "$work/r$i.bin" --state "$work/r${i}_state.bin" > /dev/null ||
        { bad "reference model $i"; continue; }
    run "fold random model $i (seed $s)" bin/fold "$work/r$i.bin" "$work/r${i}_folded.bin"
    run "folded model $i vs the ln model's reference state (--forward-only)" \
        bin/test_gpt2 "$work/r${i}_folded.bin" "$work/r${i}_state.bin" --forward-only
    run "random model $i on KJV tokens: logits and 100 greedy tokens" \
        bin/test_fold "$work/r$i.bin" "$work/r${i}_folded.bin" $val -of $(( s * 7 % (ntok - 4096) ))
done

# 2. a checkpoint trained in ln mode on the KJV bytes (a short run of the demo's trainer)
bin/train_gpt2 -N ln -e d2c64h4v256t64 -i "data/kjv/kjv_bytes_train_*.bin" -j "$val" -b 8 -t 64 -x 40 -l 3e-3 -v 0 -sd $((seed % 100000)) \
    -o "$work/run" > "$work/train.log" 2>&1 || { bad "train_gpt2 -N ln"; tail -5 "$work/train.log"; }
ckpt=$(ls "$work"/run/model_*.bin 2> /dev/null | tail -1)
echo "     trained: $(grep -E '^step +40/' "$work/train.log" | cut -c1-40)"
run "fold the trained checkpoint" bin/fold "$ckpt" "$work/trained_folded.bin"
run "trained checkpoint on KJV val tokens: logits and 100 greedy tokens" \
    bin/test_fold "$ckpt" "$work/trained_folded.bin" $val -of $(( seed % (ntok - 4096) ))
bin/foldcheck "$work/trained_folded.bin" > "$work/foldcheck.out"
grep -q "^foldable: 5/5 LNs, cbwc layers: 6" "$work/foldcheck.out" &&
    ok "foldcheck reads the folded file" || bad "foldcheck on the folded file"

# 2b. a cbwc model is the ln model of its proxy weights: it folds directly, a
#     random one against the reference state of that ln model, a trained one on KJV
s=$(( (seed + 300) % 1000000 ))
$PY dev/reference/gpt2.py --mode cbwc --seed $s --L 2 --C 64 --NH 4 --V 256 --Vp 256 --maxT 64 --B 2 --T 32 \
    --model "$work/c.bin" > /dev/null && $PY dev/reference/gpt2.py --load "$work/c.bin" --mode ln --seed $s --B 2 --T 32 \
    --state "$work/c_as_ln_state.bin" > /dev/null || bad "reference cbwc model"
run "fold a random cbwc model" bin/fold "$work/c.bin" "$work/c_folded.bin"
run "folded cbwc model vs the reference state of the ln model of its weights" \
    bin/test_gpt2 "$work/c_folded.bin" "$work/c_as_ln_state.bin" --forward-only
bin/train_gpt2 -N cbwc -e d2c64h4v256t64 -i "data/kjv/kjv_bytes_train_*.bin" -j "$val" -b 8 -t 64 -x 10 -l 3e-3 -v 0 \
    -sd $((seed % 100000 + 1)) -o "$work/run_cbwc" > "$work/train_cbwc.log" 2>&1 || bad "train_gpt2 -N cbwc"
ckpt_cbwc=$(ls "$work"/run_cbwc/model_*.bin 2> /dev/null | tail -1)
run "fold a checkpoint trained with -N cbwc" bin/fold "$ckpt_cbwc" "$work/cbwc_folded.bin"
run "cbwc checkpoint on KJV val tokens: logits and 100 greedy tokens (the fold check on your own data)" \
    bin/test_fold "$ckpt_cbwc" "$work/cbwc_folded.bin" $val -of $(( (seed + 5) % (ntok - 4096) ))

# 3. the folded file: header records what was folded; sizes are checked
read -r mode norms layers < <($PY -c "
import struct,sys; h=struct.unpack('<256i', open(sys.argv[1],'rb').read(1024)); print(h[8], h[9], h[10])" "$work/trained_folded.bin")
[ "$mode $norms $layers" = "3 5 15" ] && ok "folded header: mode 3, 5 norms folded, layer flags 15" ||
    bad "folded header: mode $mode norms $norms layers $layers"

expect_error() { # NAME PATTERN COMMAND...
    local name=$1 pattern=$2; shift 2
    "$@" > "$work/$name.out" 2> "$work/$name.err"
    local rc=$?
    if [ $rc -eq 1 ] && grep -qE -- "$pattern" "$work/$name.err"; then
        ok "bad $name: $(head -1 "$work/$name.err")"
    else
        bad "bad $name: exit $rc, stderr: $(head -c 300 "$work/$name.err")"
    fi
}
$PY dev/reference/gpt2.py --mode rms --seed 3 --L 1 --C 32 --NH 2 --V 256 --Vp 256 --maxT 16 --B 1 --T 8 \
    --model "$work/rms.bin" --state "$work/rms_state.bin" > /dev/null
expect_error fold_rms "rms.bin: norm mode is 'rms': nothing to fold.*fold takes an ln or cbwc model" bin/fold "$work/rms.bin" "$work/x.bin"
$PY dev/reference/gpt2.py --mode prms --seed 3 --L 1 --C 32 --NH 2 --V 256 --Vp 256 --maxT 16 --B 1 --T 8 \
    --model "$work/prms.bin" --state "$work/prms_state.bin" > /dev/null
expect_error fold_prms "prms.bin: norm mode is 'prms': partial RMSNorm is not the ln model of its weights" bin/fold "$work/prms.bin" "$work/x.bin"
expect_error fold_folded "norm mode is 'folded': it is folded already.*fold takes an ln or cbwc model" bin/fold "$work/trained_folded.bin" "$work/x.bin"
expect_error fold_text "not a GPT-2 model file" bin/fold docs/graphs/gpt2-d12.txt "$work/x.bin"
expect_error fold_missing "cannot open" bin/fold "$work/none.bin" "$work/x.bin"
size=$(stat -c %s "$work/trained_folded.bin")
head -c $((size - 4)) "$work/trained_folded.bin" > "$work/trunc.bin"
expect_error folded_truncated "trunc.bin: file is $((size - 4)) bytes .*truncated" bin/test_fold "$ckpt" "$work/trunc.bin" $val
# a folded file without the head's row means (the ln layout's size) is rejected too
head -c $((size - 4 * 256)) "$work/trained_folded.bin" > "$work/no_means.bin"
expect_error folded_no_means "no_means.bin: file is .*truncated" bin/test_fold "$ckpt" "$work/no_means.bin" $val
cp "$work/trained_folded.bin" "$work/slot9.bin"
printf '\x04\x00\x00\x00' | dd of="$work/slot9.bin" bs=1 seek=36 conv=notrunc 2> /dev/null
expect_error folded_header "slot9.bin: folded model records 4 folded norms" bin/test_fold "$ckpt" "$work/slot9.bin" $val
expect_error train_folded "folded model is for inference only" bin/test_gpt2 "$work/r1_folded.bin" "$work/r1_state.bin"

[ $fails -eq 0 ] && echo "fold_gpt2: all passed" || echo "fold_gpt2: $fails failed"
[ $fails -eq 0 ]
