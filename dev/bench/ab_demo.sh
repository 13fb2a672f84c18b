#!/usr/bin/env bash
# Before/after of the demo model's training step: two train_gpt2 binaries
# (e.g. one built at an older commit) run alternately, ROUNDS rounds each, at
# each thread count in THREADS; prints the median step ms of steps 3..STEPS
# over the rounds and each binary's loss at the last step (the same when only
# speed changed).
#   dev/bench/ab_demo.sh /tmp/old/train_gpt2 bin/train_gpt2
#   (env: THREADS="1 2" ROUNDS=3 STEPS=12 OUT=out/ab_demo)
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BEFORE_TRAIN_GPT2 AFTER_TRAIN_GPT2" >&2; exit 2; }
for b in "$1" "$2"; do [ -x "$b" ] || { echo "error: $b: not an executable" >&2; exit 2; }; done
before=$(realpath "$1") after=$(realpath "$2")
cd "$(dirname "$0")/../.."
threads=${THREADS:-1 2} rounds=${ROUNDS:-3} steps=${STEPS:-12} out=${OUT:-out/ab_demo}
mkdir -p "$out"
scripts/prepare_kjv.sh
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| threads | before ms | after ms | speedup | loss at step $steps before / after |"
echo "|--------:|----------:|---------:|--------:|------:|"
median_step_ms() { cat "$@" | awk '/^step/ { split($2, s, "/"); if (s[1] <= 2) next;
    for (i = 1; i <= NF; i++) if ($i == "ms") print $(i-1) }' | sort -n |
    awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
last_loss() { awk -v n="$steps" '/^step/ { split($2, s, "/"); if (s[1] == n) print $5 }' "$1"; }
for th in $threads; do
    for r in $(seq 1 "$rounds"); do
        for which in before after; do
            bin=$before; [ $which = after ] && bin=$after
            OMP_NUM_THREADS=$th "$bin" -N ln -e d4c128h4v50257t256 -b 8 -t 64 -x "$steps" -v 0 -l 3e-3 \
                -sd 1337 > "$out/${which}_${th}_$r.log"
        done
    done
    b=$(median_step_ms "$out"/before_"$th"_*.log) a=$(median_step_ms "$out"/after_"$th"_*.log)
    echo "| $th | $b | $a | $(awk -v b="$b" -v a="$a" 'BEGIN { printf "%.2fx", b / a }') |" \
         "$(last_loss "$out/before_${th}_1.log") / $(last_loss "$out/after_${th}_1.log") |"
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
