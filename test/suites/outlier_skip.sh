#!/usr/bin/env bash
# -sl / -sg (llm.c's outlier skipping, llmc/core/outlier.h): 0. bin/test_outlier
# (random windows, seeded): a value just above the limit the trainers compare
# with has a z-score above -sl, one just below has not. Then on a poisoned
# batch: the train shard is this repository's C sources (one token per byte)
# with step 141's batch replaced by random bytes (loss z-score ~4.4 and norm
# z-score ~3.9 over the 128-step window, every clean step's under 0.5), so
# with -sl 3 or -sg 3:
#   1. train_gpt2 skips step 141's update and only it, counts it in the log
#      and main.log, and trains on to step 150;
#   2. the skip is no update: the weights after step 141 equal those after
#      step 140 (a resume from step 94 stopped at 140), bit for bit; without
#      -sl they differ (the negative control);
#   3. a resume from step 94 (the windows from the state file) skips step 141
#      again and ends bit-exact;
#   4. ln (-sl 3) == cbwc (-sg 3) on every step, loss within 1e-4 (measured
#      ~2e-5); rms differs by more than 1e-2 (the negative control);
#   5. under the CUDA emulator (build/emu/train_gpt2fp32cu, a logic check, not a
#      device run; SKIP where not built): the GPU trainer skips step 141 on
#      the device (limits passed with the clip, no wait), its losses within
#      1e-4 of the CPU's, and 2 and 3 hold for it too.
# cores: 1
set -uo pipefail
cd "$(dirname "$0")/../.."
EMU=${EMU_DIR:-build/emu}
work=${1:-$(mktemp -d)}/outlier_skip
rm -rf "$work"; mkdir -p "$work"
fails=0
. test/suite_outcome.sh
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
for b in bin/train_gpt2 bin/text_to_shard bin/test_outlier; do [ -x "$b" ] || make -s "${b#bin/}"; done
# 0. the limits stand for llm.c's z-score rule (bin/test_outlier: random windows)
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
bin/test_outlier -sd "$seed" | tail -1 | grep -q '^ok' && ok "test_outlier -sd $seed: limits == z-score rule on 2000 random windows" ||
    bad "test_outlier -sd $seed"
cat llmc/*/*.c llmc/*/*.h > "$work/text.txt"
bin/text_to_shard "$work/text.txt" "$work/src" 0.1 > /dev/null || { bad "text_to_shard"; exit 1; }
poisoned=141 B=2 T=16
# step s (0-based, no shuffle, one rank) reads tokens [s B T, (s + 1) B T]
/usr/bin/python3 - "$work/src_train_000000.bin" "$work/poisoned.bin" $((poisoned - 1)) $((B * T)) <<'PY' || { bad "poisoning"; exit 1; }
import random, struct, sys
src, dst, step, bt = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
data = bytearray(open(src, "rb").read())
rng = random.Random(1)
for i in range(step * bt, (step + 1) * bt + 1):
    struct.pack_into("<H", data, 1024 + 2 * i, rng.randrange(256))
open(dst, "wb").write(bytes(data))
PY
flags=(-e d2c64h4v256t64 -i "$work/poisoned.bin" -b $B -t $T -v 0 -l 1e-3 -u 10 -sh 0 -sd 3)
trl() { grep -oE '^s:[0-9]+ trl:[^ ]+' "$1/main.log" | cut -d: -f3; }
# max_diff RUN_A RUN_B: the largest |loss difference| over their trl lines
max_diff() { paste <(trl "$1") <(trl "$2") | awk 'NF != 2 { bad = 1 } { d = $1 - $2; d = d < 0 ? -d : d; if (!(d <= w)) w = d }
                                               END { if (bad || NR != 150) print "nan"; else print w + 0 }'; }
# skipped_only RUN: main.log says exactly one skip, at the poisoned step, and reaches step 150
skipped_only() {
    [ "$(grep -c 'skipped:' "$1/main.log")" = 1 ] && grep -q "^s:$poisoned skipped:1" "$1/main.log" &&
        grep -qE '^s:150 trl:' "$1/main.log"
}
at() { printf '%s/model_%08d.bin' "$1" "$2"; }
state_at() { printf '%s/state_%08d.bin' "$1" "$2"; }
# resume_from RUN STEP NEW MAX_STEPS TRAINER FLAGS...: resume RUN's checkpoint STEP in NEW up to MAX_STEPS
resume_from() {
    local run=$1 step=$2 new=$3 max=$4 trainer=$5; shift 5
    mkdir -p "$new" && cp "$(at "$run" "$step")" "$(state_at "$run" "$step")" "$new/" &&
        "$trainer" "$@" -x "$max" -o "$new" -y 1 > "$new.out" 2>&1
}

# checks 1-3 for TRAINER (NAME: cpu or gpu); the full run is NAME_ln
skip_checks() {
    local name=$1 trainer=$2 run=$work/$1_ln
    "$trainer" -N ln "${flags[@]}" -sl 3 -x 150 -n 47 -o "$run" > "$run.out" 2>&1 || { bad "$name: run: $(tail -2 "$run.out")"; return; }
    if skipped_only "$run" && grep -q "^step $poisoned: update skipped" "$run.out"; then
        ok "$name: -sl 3 skipped step $poisoned's update only ($(grep -oE 'loss [0-9.]+ \(z [^,]+' "$run.out"))) and went on to step 150"
    else bad "$name: skips: $(grep -c 'skipped' "$run/main.log") in main.log, not just step $poisoned"; fi
    resume_from "$run" 94 "$work/${name}_to140" 140 "$trainer" -N ln "${flags[@]}" -sl 3 ||
        bad "$name: resume to 140: $(tail -2 "$work/${name}_to140.out")"
    cmp -s "$(at "$run" $poisoned)" "$(at "$work/${name}_to140" 140)" &&
        ok "$name: the weights after step $poisoned equal those after step 140 (no update)" ||
        bad "$name: step $poisoned changed the weights"
    resume_from "$run" 94 "$work/${name}_resumed" 150 "$trainer" -N ln "${flags[@]}" -sl 3 ||
        bad "$name: resume to 150: $(tail -2 "$work/${name}_resumed.out")"
    if skipped_only "$work/${name}_resumed" && cmp -s "$(at "$run" 150)" "$(at "$work/${name}_resumed" 150)" &&
        cmp -s "$(state_at "$run" 150)" "$(state_at "$work/${name}_resumed" 150)"; then
        ok "$name: resumed at step 94 (windows from the state), skipped step $poisoned again, model and state bit-exact"
    else bad "$name: the resume from step 94 differs from the uninterrupted run"; fi
}

skip_checks cpu bin/train_gpt2
# AdamW's step count advances over a skipped step (llm.c: t = step + 1)
t=$(/usr/bin/python3 -c 'import struct, sys; print(struct.unpack("<4i", open(sys.argv[1], "rb").read(16))[3])' \
    "$(state_at "$work/cpu_ln" $poisoned)")
[ "$t" = $poisoned ] && ok "cpu: AdamW step count $t after step $poisoned" || bad "cpu: AdamW step count $t after step $poisoned"
bin/train_gpt2 -N ln "${flags[@]}" -x 150 -n 47 -o "$work/cpu_noskip" > "$work/cpu_noskip.out" 2>&1
! grep -q 'skipped' "$work/cpu_noskip/main.log" && ! cmp -s "$(at "$work/cpu_noskip" $poisoned)" "$(at "$work/cpu_ln" $poisoned)" &&
    ok "negative control: without -sl step $poisoned updates (other weights)" || bad "negative control: without -sl"
bin/train_gpt2 -N cbwc "${flags[@]}" -sg 3 -x 150 -o "$work/cpu_cbwc" > "$work/cpu_cbwc.out" 2>&1
bin/train_gpt2 -N rms "${flags[@]}" -sl 3 -x 150 -o "$work/cpu_rms" > "$work/cpu_rms.out" 2>&1
cbwc=$(max_diff "$work/cpu_ln" "$work/cpu_cbwc") rms=$(max_diff "$work/cpu_ln" "$work/cpu_rms")
if skipped_only "$work/cpu_cbwc" && awk -v c="$cbwc" -v r="$rms" 'BEGIN { exit !(c <= 1e-4 && r > 1e-2) }'; then
    ok "ln (-sl 3) == cbwc (-sg 3): both skip step $poisoned only, losses within $cbwc (tolerance 1e-4); rms: $rms"
else bad "ln vs cbwc: max loss difference $cbwc (tolerance 1e-4), rms $rms (> 1e-2 expected)"; fi

if [ -x "$EMU/train_gpt2fp32cu" ]; then
    export OMP_NUM_THREADS=1 EMU_RACECHECK=0
    skip_checks gpu "$EMU/train_gpt2fp32cu"
    d=$(max_diff "$work/cpu_ln" "$work/gpu_ln")
    awk -v d="$d" 'BEGIN { exit !(d <= 1e-4) }' && ok "gpu: losses within $d of the CPU's (tolerance 1e-4)" ||
        bad "gpu: losses differ from the CPU's by $d (tolerance 1e-4)"
else
    skip_part "gpu: $EMU/train_gpt2fp32cu not built (make emu)"
fi
echo "$fails failed"
suite_exit $fails
