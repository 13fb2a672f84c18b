#!/usr/bin/env bash
# Lose nothing: a training run checkpointing every step is killed with -9 at
# random moments 20 times (often mid-write) and resumed with -y 1 each time
# (started without -y while its folder holds no checkpoint yet). Every loss
# line it ever printed must equal the uninterrupted run's line for that step,
# each finished run's main.log must have the uninterrupted run's s: lines (no
# duplicate lines), the newest checkpoint must always load, and the final
# weights must be bit-identical. Variants: train_gpt2 (GPT-2, cbwc), train_vit
# with a ViT and with a Swin (model, AdamW moments, train order and position,
# augmentation RNG). gpt2 also: a non-finite loss stops the run before any
# checkpoint is written.
# variants: gpt2 vit swin
set -uo pipefail
cd "$(dirname "$0")/../.."
variant=${2:-gpt2}
work=${1:-$(mktemp -d)}/kill_resume_$variant
rm -rf "$work"; mkdir -p "$work"
seed=${FOLDNORM_TEST_SEED:-$RANDOM}
RANDOM=$seed
echo "seed $seed, variant $variant"
export OMP_NUM_THREADS=1  # a tiny model: threads only add barrier waits
fmnist=/usr/share/datasets/fashion-mnist
case $variant in
gpt2)
    cat llmc/*/*.c llmc/*/*.h > "$work/text.txt"
    bin/text_to_shard "$work/text.txt" "$work/src" 0.1 > /dev/null || exit 1
    prog=bin/train_gpt2
    flags=(-e d2c64h4v256t64 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin" -b 4 -t 64
           -x 24 -n 1 -nk 2 -v 8 -m 2 -l 2e-3 -u 4 -q 0.1 -c 0.1 -sd $((seed % 1000)) -N cbwc)
    # the newest checkpoint's model loads (no step)
    load_model() { bin/train_gpt2 -e "$1" -x 0 -v 0 -i "$work/src_train_*.bin"; } ;;
vit|swin)
    [ -f "$fmnist/train-images-idx3-ubyte.gz" ] || { echo "FAIL no Fashion-MNIST in $fmnist"; exit 1; }
    prog=bin/train_vit
    # 64 images, B 16: 4 steps an epoch, so the 16 steps cross three epoch
    # ends (shuffles, test passes) and checkpoints are mid-epoch and at ends
    flags=(-i "$fmnist" -b 16 -nt 64 -ne 32 -x 16 -n 1 -nk 2 -pe 1 -u 4 -l 2e-3 -N cbwc
           -sd $((seed % 1000)))
    if [ $variant = vit ]; then flags+=(-e vit -C 16 -L 1 -H 2); else flags+=(-e swin -E 8 -A 1,2 -K 1); fi
    # the newest checkpoint's model loads (a one-step run from it)
    load_model() { bin/train_vit -e "$1" -i "$fmnist" -b 16 -nt 16 -ne 16 -x 1; } ;;
*) echo "unknown variant $variant"; exit 1 ;;
esac
last=$(printf %08d "$(awk '{ for (i = 1; i < NF; i++) if ($i == "-x") print $(i + 1) }' <<< "${flags[*]}")")
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

t0=$(date +%s%N)
$prog "${flags[@]}" -o "$work/full" > "$work/full.out" 2>&1 || { echo "FAIL full run: $(tail -2 "$work/full.out")"; exit 1; }
t1=$(date +%s%N)
run_ms=$(( (t1 - t0) / 1000000 ))
echo "uninterrupted run: $run_ms ms"

# kill chains: each chain resumes in its own directory until a run completes;
# a new chain starts until 20 kills have landed
: > "$work/all_lines.txt"
kills=0 chain=0 load_checks=0 want_kills=20
[ $variant = gpt2 ] || want_kills=8 # each vision start reads Fashion-MNIST (~0.2 s)
dir=$work/chain0
# -y 1 once the folder holds a checkpoint (a state file; -y 1 without one is refused)
resume_flag() { ls "$1" 2>/dev/null | grep -qE '^state_[0-9]{8}\.bin$' && echo "-y 1"; }
# a finished run: its log's s: lines are the uninterrupted run's (the run
# record, "# ..." lines, names other folders), its weights too
check_finished() {
    cat "$dir/main.log" >> "$work/all_lines.txt"
    cmp -s "$work/full/model_$last.bin" "$dir/model_$last.bin" || fail "chain $chain: final weights differ"
    diff <(grep '^s:' "$work/full/main.log") <(grep '^s:' "$dir/main.log") > "$work/log.diff" ||
        fail "chain $chain: main.log's s: lines differ from the uninterrupted run's: $(head -3 "$work/log.diff" | tr '\n' ' ')"
}
while [ $kills -lt $want_kills ]; do
    # shellcheck disable=SC2046
    $prog "${flags[@]}" -o "$dir" $(resume_flag "$dir") > "$work/attempt.out" 2>&1 &
    pid=$!
    sleep "$(awk -v r=$RANDOM -v ms="$run_ms" 'BEGIN { printf "%.3f", (r / 32768.0) * ms / 1000.0 }')"
    if kill -9 $pid 2>/dev/null; then
        kills=$((kills + 1))
        wait $pid 2>/dev/null
    else
        wait $pid || fail "a resumed run failed: $(tail -2 "$work/attempt.out")"
        check_finished
        chain=$((chain + 1)); dir=$work/chain$chain
        continue
    fi
    # the newest checkpoint on disk must be complete and load
    latest=$(ls "$dir" 2>/dev/null | grep -oE '^state_[0-9]{8}\.bin$' | sort | tail -1)
    if [ -n "$latest" ]; then
        step=${latest:6:8}
        load_model "$dir/model_$step.bin" > "$work/load.out" 2>&1 \
            || fail "model_$step.bin does not load: $(tail -1 "$work/load.out")"
        load_checks=$((load_checks + 1))
    fi
done
# shellcheck disable=SC2046
$prog "${flags[@]}" -o "$dir" $(resume_flag "$dir") > "$work/final.out" 2>&1 || fail "final resume run failed: $(tail -2 "$work/final.out")"
check_finished
echo "killed $kills times over $((chain + 1)) chains; newest checkpoint loaded $load_checks times"

# every train/val line ever written must match the uninterrupted run's line for that step
# (the "s:" lines: the run record differs, -o names another folder)
mismatch=$(awk '!/^s:/ { next } NR == FNR { split($2, a, ":"); ref[$1 " " a[1]] = $0; next }
    { split($2, a, ":"); key = $1 " " a[1]; if (!(key in ref) || ref[key] != $0) { print; n++ } }
    END { exit n > 0 }' "$work/full/main.log" "$work/all_lines.txt") || fail "lines differ from the uninterrupted run: $(echo "$mismatch" | head -3)"
echo "ok   $(wc -l < "$work/all_lines.txt") logged lines, $((chain + 1)) logs and final weights match the uninterrupted run"
[ $variant = gpt2 ] || { echo "$fails failed"; [ $fails -eq 0 ]; exit; }

# NaN guard: weights so large that the logits overflow -> stop before any checkpoint
bin/train_gpt2 -e d2c64h4v256t64 -x 0 -v 0 -i "$work/src_train_*.bin" -o "$work/init" > /dev/null 2>&1
/usr/bin/python3 - "$work/init/model_00000000.bin" "$work/huge.bin" <<'PYEOF'
import sys, numpy as np
raw = np.fromfile(sys.argv[1], dtype=np.uint8)
params = raw[1024:].view(np.float32).copy() * np.float32(3e18)
header = raw[:1024].copy()
header[1016:1024] = 0  # no checksum (slots 254-255), as in llm.c's files: the weights changed
open(sys.argv[2], "wb").write(header.tobytes() + params.tobytes())
PYEOF
bin/train_gpt2 -e "$work/huge.bin" -i "$work/src_train_*.bin" -v 0 -x 3 -n 1 -b 4 -t 64 -o "$work/nan" > "$work/nan.out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "non-finite" "$work/nan.out" && ! ls "$work/nan" | grep -q '^model_'; then
    echo "ok   non-finite loss: exit 1, $(grep -o 'step [0-9]*: non-finite[^;]*' "$work/nan.out"), no checkpoint written"
else
    fail "NaN guard: exit $rc, $(tail -1 "$work/nan.out"), files: $(ls "$work/nan" 2>/dev/null | tr '\n' ' ')"
fi
echo "$fails failed"
[ $fails -eq 0 ]
