#!/usr/bin/env bash
# train_gpt2 end to end on a real text shard (this repository's own C
# sources, one token per byte): the loss falls, main.log holds llm.c-style
# lines, and resuming from the step-4 checkpoint reproduces the uninterrupted
# run's loss lines and final weights bit for bit, in every norm mode.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/train_resume
rm -rf "$work"; mkdir -p "$work"
cat llmc/*/*.c llmc/*/*.h train_gpt2.c > "$work/text.txt"
bin/text_to_shard "$work/text.txt" "$work/src" 0.1 > /dev/null || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
for mode in ln rms cbwc prms; do
    flags=(-N $mode -e d2c64h4v256t64 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin"
           -b 4 -t 32 -x 8 -n 4 -v 4 -m 2 -l 3e-3 -u 2 -q 0.1 -c 0.1 -sd 7)
    bin/train_gpt2 "${flags[@]}" -o "$work/$mode.full" > "$work/$mode.full.out" 2>&1 || { fail "$mode: full run"; continue; }
    mkdir -p "$work/$mode.resumed"
    cp "$work/$mode.full/model_00000004.bin" "$work/$mode.full/state_00000004.bin" "$work/$mode.resumed/"
    bin/train_gpt2 "${flags[@]}" -o "$work/$mode.resumed" -y 1 > "$work/$mode.resumed.out" 2>&1 || { fail "$mode: resumed run"; continue; }
    log=$work/$mode.full/main.log
    grep -qE '^s:8 trl:[0-9.]+' "$log" && grep -qE '^s:8 tel:[0-9.]+' "$log" || fail "$mode: main.log lacks s:8 trl/tel lines"
    first=$(grep -oE '^s:1 trl:[0-9.]+' "$log" | cut -d: -f3)
    lastl=$(grep -oE '^s:8 trl:[0-9.]+' "$log" | cut -d: -f3)
    awk -v a="$first" -v b="$lastl" 'BEGIN { exit !(b < a - 0.1) }' || fail "$mode: loss did not fall ($first -> $lastl)"
    diff <(grep -E '^s:[5-8] trl' "$log") <(grep -E '^s:[5-8] trl' "$work/$mode.resumed/main.log") > /dev/null \
        || fail "$mode: resumed loss lines differ from the uninterrupted run"
    cmp -s "$work/$mode.full/model_00000008.bin" "$work/$mode.resumed/model_00000008.bin" \
        || fail "$mode: resumed final weights differ"
    grep -q "mode $mode" "$work/$mode.full.out" || fail "$mode: progress output does not name the mode"
    echo "ok   $mode: loss $first -> $lastl, resume bit-exact"
done
# with samples every 2 steps: the resumed run's RNG (in the final state file)
# and its later samples equal the uninterrupted run's (no second sample at the
# step resumed from)
sflags=(-N ln -e d2c64h4v256t64 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin" -b 2 -t 16 -x 6 -n 3 -s 2 -g 8 -sd 11)
bin/train_gpt2 "${sflags[@]}" -o "$work/s.full" > "$work/s.full.out" 2>&1 || fail "sampling run"
mkdir -p "$work/s.resumed"
cp "$work/s.full/model_00000003.bin" "$work/s.full/state_00000003.bin" "$work/s.resumed/"
bin/train_gpt2 "${sflags[@]}" -o "$work/s.resumed" -y 1 > "$work/s.resumed.out" 2>&1 || fail "resumed sampling run"
cmp -s "$work/s.full/state_00000006.bin" "$work/s.resumed/state_00000006.bin" &&
    diff <(grep '^sample' "$work/s.full.out" | tail -2) <(grep '^sample' "$work/s.resumed.out") > /dev/null &&
    echo "ok   sampling: resumed RNG state and samples equal the uninterrupted run's" ||
    fail "sampling: the resumed run's RNG or samples differ"
echo "$fails failed"
[ $fails -eq 0 ]
