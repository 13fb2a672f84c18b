#!/usr/bin/env bash
# Lose nothing: a training run checkpointing every step is killed with -9 at
# random moments 20 times (often mid-write) and resumed with -y 1 each time.
# Every loss line it ever printed must equal the uninterrupted run's line for
# that step, the newest checkpoint must always load, and the final weights
# must be bit-identical. Also: a non-finite loss stops the run before any
# checkpoint is written.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/kill_resume
rm -rf "$work"; mkdir -p "$work"
seed=${FOLDNORM_TEST_SEED:-$RANDOM}
RANDOM=$seed
echo "seed $seed"
cat llmc/*.c llmc/*.h > "$work/text.txt"
bin/text_to_shard "$work/text.txt" "$work/src" 0.1 > /dev/null || exit 1
export OMP_NUM_THREADS=1  # a tiny model: threads only add barrier waits
flags=(-e d2c64h4v256t64 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin" -b 4 -t 64
       -x 24 -n 1 -nk 2 -v 8 -m 2 -l 2e-3 -u 4 -q 0.1 -c 0.1 -sd $((seed % 1000)))
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

t0=$(date +%s%N)
bin/train_gpt2 "${flags[@]}" -N cbwc -o "$work/full" > "$work/full.out" 2>&1 || { echo "FAIL full run"; exit 1; }
t1=$(date +%s%N)
run_ms=$(( (t1 - t0) / 1000000 ))
echo "uninterrupted run: $run_ms ms"

# kill chains: each chain resumes in its own directory until a run completes;
# a new chain starts until 20 kills have landed
: > "$work/all_lines.txt"
kills=0 chain=0 load_checks=0
dir=$work/chain0
while [ $kills -lt 20 ]; do
    bin/train_gpt2 "${flags[@]}" -N cbwc -o "$dir" -y 1 > "$work/attempt.out" 2>&1 &
    pid=$!
    sleep "$(awk -v r=$RANDOM -v ms="$run_ms" 'BEGIN { printf "%.3f", (r / 32768.0) * ms / 1000.0 }')"
    if kill -9 $pid 2>/dev/null; then
        kills=$((kills + 1))
        wait $pid 2>/dev/null
    else
        wait $pid || fail "a resumed run failed: $(tail -2 "$work/attempt.out")"
        cat "$dir/main.log" >> "$work/all_lines.txt"
        cmp -s "$work/full/model_00000024.bin" "$dir/model_00000024.bin" || fail "chain $chain: final weights differ"
        chain=$((chain + 1)); dir=$work/chain$chain
        continue
    fi
    # the newest checkpoint on disk must be complete and load
    latest=$(ls "$dir" 2>/dev/null | grep -oE '^state_[0-9]{8}\.bin$' | sort | tail -1)
    if [ -n "$latest" ]; then
        step=${latest:6:8}
        bin/train_gpt2 -e "$dir/model_$step.bin" -x 0 -v 0 -i "$work/src_train_*.bin" > "$work/load.out" 2>&1 \
            || fail "model_$step.bin does not load: $(tail -1 "$work/load.out")"
        load_checks=$((load_checks + 1))
    fi
done
bin/train_gpt2 "${flags[@]}" -N cbwc -o "$dir" -y 1 > "$work/final.out" 2>&1 || fail "final resume run failed: $(tail -2 "$work/final.out")"
cat "$dir/main.log" >> "$work/all_lines.txt"
cmp -s "$work/full/model_00000024.bin" "$dir/model_00000024.bin" || fail "final weights differ from the uninterrupted run"
echo "killed $kills times over $((chain + 1)) chains; newest checkpoint loaded $load_checks times"

# every train/val line ever written must match the uninterrupted run's line for that step
# (the "s:" lines: the run record differs, -o names another folder)
mismatch=$(awk '!/^s:/ { next } NR == FNR { split($2, a, ":"); ref[$1 " " a[1]] = $0; next }
    { split($2, a, ":"); key = $1 " " a[1]; if (!(key in ref) || ref[key] != $0) { print; n++ } }
    END { exit n > 0 }' "$work/full/main.log" "$work/all_lines.txt") || fail "lines differ from the uninterrupted run: $(echo "$mismatch" | head -3)"
echo "ok   $(wc -l < "$work/all_lines.txt") logged lines and the final weights match the uninterrupted run"

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
