#!/usr/bin/env bash
# make bench: (a) GPT-2 124M (d12) training steps, B=4 T=64 fp32, per norm mode
# (median step and phase times, peak RSS), side by side with llm.c's
# train_gpt2.c when LLMC_DIR names a built llm.c checkout (never part of this
# repository: see docs/performance.md); (b) LN vs RMS kernels vs a memory copy.
# Not a test: it prints figures, it asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/../.."
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
steps=${BENCH_STEPS:-10}      # timed steps per run; the first 2 are warmup
rounds=${BENCH_ROUNDS:-2}     # interleaved rounds over the runs
out=${BENCH_OUT:-out/bench}
mkdir -p "$out"
scripts/prepare_kjv_bytes.sh
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, OMP_NUM_THREADS=$OMP_NUM_THREADS"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo none)"

# the same random-init d12 model for llm.c (its fixed file name) as for us
if [ -n "${LLMC_DIR:-}" ]; then
    llmc_run=$out/llmc_run
    mkdir -p "$llmc_run/dev/data/tinyshakespeare"
    bin/train_gpt2 -e d12 -x 0 -v 0 -o "$out/d12init" > /dev/null
    ln -sf "$PWD/$out/d12init/model_00000000.bin" "$llmc_run/gpt2_124M.bin"
    ln -sf "$PWD/data/kjv/kjv_bytes_train_000000.bin" "$llmc_run/dev/data/tinyshakespeare/tiny_shakespeare_train.bin"
    ln -sf "$PWD/data/kjv/kjv_bytes_val_000000.bin" "$llmc_run/dev/data/tinyshakespeare/tiny_shakespeare_val.bin"
fi

median() { sort -n | awk '{a[NR] = $1} END { if (NR == 0) print "nan"; else print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
rss_mb() { grep 'Maximum resident' "$1" | awk '{printf "%.0f", $6 / 1024}'; }

run_ours() { # MODE ROUND
    /usr/bin/time -v -o "$out/ours_$1_$2.time" bin/train_gpt2 -e d12 -N "$1" -b 4 -t 64 -x $((steps + 2)) -v 0 \
        > "$out/ours_$1_$2.log"
}
run_llmc() { # ROUND: llm.c runs 40 steps with eval and sampling; stop it after ours' count
    # grep exits after n step lines; tee and then llm.c die of SIGPIPE on their next line
    (cd "$llmc_run" && /usr/bin/time -v -o "../llmc_$1.time" stdbuf -oL "$LLMC_DIR/train_gpt2" 2>&1 |
        tee "../llmc_$1.log" | grep --line-buffered -m $((steps + 2)) '^step [0-9]*: train loss' > /dev/null) || true
}
for r in $(seq 1 "$rounds"); do
    [ -n "${LLMC_DIR:-}" ] && { echo "round $r: llm.c"; run_llmc "$r"; }
    for mode in ln rms cbwc; do echo "round $r: ours $mode"; run_ours $mode "$r"; done
done

# per-step figures from the progress lines, warmup steps dropped
ours_field() { # MODE FIELD(total|fwd|bwd|upd)
    cat "$out"/ours_"$1"_*.log | awk -v f="$2" '/^step/ { split($2, s, "/"); if (s[1] <= 2) next;
        for (i = 1; i <= NF; i++) { if ($i == "ms") t = $(i-1); if ($i == "(fwd") fw = $(i+1); if ($i == "bwd") bw = $(i+1); if ($i == "upd") up = $(i+1) }
        sub(/\)/, "", up); print (f == "total" ? t : f == "fwd" ? fw : f == "bwd" ? bw : up) }' | median
}
echo
echo "## GPT-2 124M (d12) training step, B=4 T=64 fp32, $OMP_NUM_THREADS threads, median over $((steps * rounds)) steps"
echo
echo "| run | step ms | forward ms | backward ms | update ms | peak RSS MB | step vs llm.c |"
echo "|-----|--------:|-----------:|------------:|----------:|------------:|--------------:|"
llmc_ms=""
if [ -n "${LLMC_DIR:-}" ]; then
    llmc_ms=$(cat "$out"/llmc_*.log | awk '/^step [0-9]+: train loss/ { if ($2 + 0 >= 2) print $(NF-1) }' | sed 's/(took //' | median)
    echo "| llm.c train_gpt2.c | $llmc_ms | | | | $(rss_mb "$out/llmc_1.time") | 1.00x |"
fi
for mode in ln rms cbwc; do
    t=$(ours_field $mode total)
    ratio=$([ -n "$llmc_ms" ] && awk -v a="$llmc_ms" -v b="$t" 'BEGIN { printf "%.2fx faster", a / b }' || echo "-")
    echo "| foldnorm $mode | $t | $(ours_field $mode fwd) | $(ours_field $mode bwd) | $(ours_field $mode upd) | $(rss_mb "$out/ours_${mode}_1.time") | $ratio |"
done
echo
echo "## The three modes side by side in one process (bench_gpt2: one step of each mode per round)"
echo
bin/bench_gpt2 -e d12 -b 4 -t 64 -r "${BENCH_MODE_ROUNDS:-12}" -w 2
echo
echo "## LayerNorm vs RMSNorm kernels"
echo
bin/bench_norms
echo
echo "## Inference: folded vs LN (bench_fold: forward only, the two models interleaved)"
echo
bin/bench_fold -e d4c256h4v256t1024 -b "1 8" -t "64 256 1024" -r "${BENCH_FOLD_ROUNDS:-7}"
bin/bench_fold -e d4c256h4v256t2048 -b 1 -t 2048 -r 5
bin/bench_fold -e d12 -b 1 -t "64 256" -r 5
