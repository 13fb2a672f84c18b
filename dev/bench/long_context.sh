#!/usr/bin/env bash
# Long context (issue 16): GPT-2 124M (d12) training steps at B=1 T=1024
# against B=16 T=64 (the same 1024 tokens a step), and the T=64 shapes of
# make bench (d12 B=4) and the demo (d4c128h4v50257t256 B=8); fp32, norm mode
# ln, on the KJV shards. Runs are interleaved round by round, so drift of a
# shared machine hits every shape alike. BEFORE=DIR (a built checkout of an
# earlier commit) adds DIR/bin/train_gpt2 runs of every shape, interleaved
# with ours. Prints the median step, forward and backward ms (warmup steps
# dropped) and the peak RSS of each (build, shape). Not a test: it asserts nothing.
#   dev/bench/long_context.sh                 BENCH_STEPS (6) BENCH_ROUNDS (2) BENCH_OUT
set -euo pipefail
cd "$(dirname "$0")/../.."
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
steps=${BENCH_STEPS:-6}   # timed steps per run, after 2 warmup steps
rounds=${BENCH_ROUNDS:-2}
out=${BENCH_OUT:-out/bench_long_context}
mkdir -p "$out"
[ -x bin/train_gpt2 ] || make -s train_gpt2
builds=(ours)
if [ -n "${BEFORE:-}" ]; then
    [ -x "$BEFORE/bin/train_gpt2" ] || { echo "long_context.sh: BEFORE=$BEFORE has no bin/train_gpt2" >&2; exit 2; }
    builds+=(before)
fi
shapes=("d12 1 1024" "d12 16 64" "d12 4 64" "d4c128h4v50257t256 8 64")
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, OMP_NUM_THREADS=$OMP_NUM_THREADS, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo none)${BEFORE:+, before: $(git -C "$BEFORE" rev-parse --short HEAD 2>/dev/null || echo "$BEFORE")}"

tag() { echo "$1_$(tr ' ' _ <<< "$2")"; } # BUILD SHAPE
for r in $(seq 1 "$rounds"); do
    for shape in "${shapes[@]}"; do
        read -r model B T <<< "$shape"
        for build in "${builds[@]}"; do
            bin=bin/train_gpt2
            [ "$build" = before ] && bin=$BEFORE/bin/train_gpt2
            echo "round $r: $build $model B=$B T=$T"
            /usr/bin/time -v -o "$out/$(tag "$build" "$shape")_$r.time" \
                "$bin" -e "$model" -N ln -b "$B" -t "$T" -x $((steps + 2)) -v 0 \
                > "$out/$(tag "$build" "$shape")_$r.log"
        done
    done
done

median() { sort -n | awk '{a[NR] = $1} END { if (NR == 0) print "nan"; else print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
field() { # TAG FIELD(total|fwd|bwd): the step lines after the 2 warmup steps, every round
    cat "$out/$1"_*.log | awk -v f="$2" '/^step/ { split($2, s, "/"); if (s[1] <= 2) next;
        for (i = 1; i <= NF; i++) { if ($i == "ms") t = $(i-1); if ($i == "(fwd") fw = $(i+1); if ($i == "bwd") bw = $(i+1) }
        print (f == "total" ? t : f == "fwd" ? fw : bw) }' | median
}
rss_mb() { cat "$out/$1"_*.time | awk '/Maximum resident/ { if ($6 > m) m = $6 } END { printf "%.0f", m / 1024 }'; }
echo
echo "| build | model | B | T | step ms | forward ms | backward ms | peak RSS MB |"
echo "|---|---|--:|--:|--:|--:|--:|--:|"
for shape in "${shapes[@]}"; do
    read -r model B T <<< "$shape"
    for build in "${builds[@]}"; do
        t=$(tag "$build" "$shape")
        echo "| $build | $model | $B | $T | $(field "$t" total) | $(field "$t" fwd) | $(field "$t" bwd) | $(rss_mb "$t") |"
    done
done
