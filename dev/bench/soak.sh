#!/usr/bin/env bash
# Soak: a tiny GPT-2 trained for STEPS steps (default 20000) with a
# checkpoint every 100 steps, the newest 3 kept (-n 100 -nk 3) and a val pass
# every 500. Every 0.1 s it reads the trainer's resident memory (VmRSS in
# /proc/PID/status), its open file descriptors (/proc/PID/fd) and the
# checkpoints in its folder. After warm-up (the first 10% of the steps, at
# least 1000: two val passes, ten checkpoints and prunes) the resident memory
# may grow by less than 1%; the descriptors may rise by at most 2 while a
# checkpoint is written (its file, its folder for the fsync) but must be back
# to the warm-up count in the last quarter of the samples (a leak of one per
# checkpoint would not be); the folder never holds more than 4 checkpoints
# (3 kept + the one just written, before the prune). Exits 1 if any limit is
# broken.
#   dev/bench/soak.sh [STEPS [WORK_DIR]]       (test/suites/soak_short.sh: 2000 steps)
set -uo pipefail
cd "$(dirname "$0")/../.."
steps=${1:-20000}
work=${2:-$(mktemp -d /tmp/soak.XXXXXX)}
mkdir -p "$work"
rm -rf "$work/run" "$work/samples.txt"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
[ -f "$work/src_val_000000.bin" ] || {
    cat llmc/*/*.c llmc/*/*.h > "$work/text.txt"
    bin/text_to_shard "$work/text.txt" "$work/src" 0.1 > /dev/null || exit 1
}
bin/train_gpt2 -e d1c32h2v256t32 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin" -b 2 -t 32 \
    -x "$steps" -n 100 -nk 3 -v 500 -m 2 -l 1e-3 -o "$work/run" > "$work/train.out" 2>&1 &
pid=$!
t0=$(date +%s%N)
# samples: STEP RSS_KB FDS CHECKPOINTS, one a line
while kill -0 $pid 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ { print $2 }' /proc/$pid/status 2>/dev/null)
    fds=$(ls /proc/$pid/fd 2>/dev/null | wc -l)
    step=$(tail -c 200 "$work/run/main.log" 2>/dev/null | grep -oE '^s:[0-9]+ trl' | tail -1 | grep -oE '[0-9]+')
    ckpts=$(ls "$work/run" 2>/dev/null | grep -cE '^state_[0-9]{8}\.bin$')
    [ -n "$rss" ] && [ -n "$step" ] && echo "$step $rss $fds $ckpts" >> "$work/samples.txt"
    sleep 0.1
done
wait $pid; rc=$?
seconds=$(awk -v ns=$(( $(date +%s%N) - t0 )) 'BEGIN { printf "%.1f", ns / 1e9 }')
[ $rc -eq 0 ] || { echo "FAIL the run exited $rc: $(tail -2 "$work/train.out")"; exit 1; }
[ -s "$work/samples.txt" ] || { echo "FAIL no samples"; exit 1; }
warmup=$(( steps / 10 > 1000 ? steps / 10 : 1000 ))
total=$(wc -l < "$work/samples.txt")
awk -v steps="$steps" -v secs="$seconds" -v warmup="$warmup" -v total="$total" '
    $1 >= warmup && base == "" { base = $2; fd0 = $3; at = $1; fdmax = $3; fdlate = 1e9 }
    base != "" {
        if ($2 > max) max = $2
        if ($3 > fdmax) fdmax = $3
        if (NR > total * 3 / 4 && $3 < fdlate) fdlate = $3
        n++
    }
    $4 > ck { ck = $4 }
    END {
        if (base == "" || n < 4) { print "FAIL too few samples after warm-up (step " warmup ")"; exit 1 }
        growth = 100.0 * (max - base) / base
        printf "soak: %d steps in %s s; after warm-up (step %d, %d samples): VmRSS %d kB -> max %d kB (%+.2f%%); fds %d, max %d, last quarter min %d; at most %d checkpoints\n",
               steps, secs, at, n, base, max, growth, fd0, fdmax, fdlate, ck
        bad = 0
        if (growth >= 1.0) { print "FAIL resident memory grew by " growth "% (limit 1%)"; bad = 1 }
        if (fdmax > fd0 + 2 || fdlate > fd0) { print "FAIL open file descriptors leak"; bad = 1 }
        if (ck > 4) { print "FAIL " ck " checkpoints in the folder (keep 3, + 1 before the prune)"; bad = 1 }
        exit bad
    }' "$work/samples.txt"
