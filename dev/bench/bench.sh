#!/usr/bin/env bash
# make bench: (a) GPT-2 124M (d12) training steps, B=4 T=64 fp32, per norm mode
# (median step and phase times, peak RSS), side by side with the PyTorch
# nanoGPT-style model in dev/bench/torch_gpt2.py (Debian's torch; BENCH_TORCH=0
# leaves it out) and with llm.c's train_gpt2.c when LLMC_DIR names an llm.c
# checkout (its source: never part of this repository, see
# docs/performance.md); (b) AdamW and the LN vs RMS kernels vs a memory copy;
# (c) folded vs LN inference; (d) the matmul libraries (OpenBLAS, BLIS,
# oneDNN fp32 and bf16) at d12's shapes; (e) the host augmentation of the
# image trainers (bench_augment, about 10 s); (f) generation with and without
# the KV cache. Not a test: it prints figures, it asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/../.."
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
steps=${BENCH_STEPS:-10}      # timed steps per run; the first 2 are warmup
rounds=${BENCH_ROUNDS:-2}     # interleaved rounds over the runs
out=${BENCH_OUT:-out/bench}
PY=${PYTHON:-/usr/bin/python3}
mkdir -p "$out"
out=$(cd "$out" && pwd)      # absolute: llm.c runs in a folder of its own
# every program reads the byte-level KJV shards (V = 256 < 50257, so any
# GPT-2 vocabulary model takes them): the data llm.c's loader finds under its
# fixed tiny_shakespeare names
scripts/prepare_kjv_bytes.sh
train_glob="data/kjv/kjv_bytes_train_*.bin" val_glob="data/kjv/kjv_bytes_val_*.bin"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, OMP_NUM_THREADS=$OMP_NUM_THREADS, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo none)"
bin/cpu_info | sed 's/^/machine: /'   # the vector flags, oneDNN's ISA, OpenBLAS's kernels

# llm.c's train_gpt2.c runs a fixed 40 steps (with evaluation every 10 and
# sampling every 20); we build it here from LLMC_DIR's source with its loop
# bound set to our step count, so that it stops by itself: no signals.
if [ -n "${LLMC_DIR:-}" ]; then
    src=$LLMC_DIR/train_gpt2.c
    [ -f "$src" ] || { echo "error: LLMC_DIR=$LLMC_DIR: no train_gpt2.c there (an llm.c checkout?)" >&2; exit 1; }
    bound='for (int step = 0; step <= 40; step++)'
    [ "$(grep -cF "$bound" "$src")" = 1 ] ||
        { echo "error: $src: expected one '$bound' loop to set the step count" >&2; exit 1; }
    llmc_run=$out/llmc_run
    mkdir -p "$llmc_run/dev/data/tinyshakespeare"
    # its steps 0..steps+1: as many step lines as ours
    sed "s/for (int step = 0; step <= 40; step++)/for (int step = 0; step <= $((steps + 1)); step++)/" \
        "$src" > "$llmc_run/train_gpt2_steps.c"
    # llm.c's own Makefile flags for the CPU trainer
    ${CC:-gcc} -Ofast -march=native -fopenmp -DOMP -Wno-unused-result -I"$LLMC_DIR" \
        "$llmc_run/train_gpt2_steps.c" -lm -o "$llmc_run/train_gpt2_steps"
    # the same random-init d12 model for llm.c (its fixed file name) as for us
    bin/train_gpt2 -e d12 -x 0 -v 0 -i "$train_glob" -j "$val_glob" -o "$out/d12init" > /dev/null
    ln -sf "$out/d12init/model_00000000.bin" "$llmc_run/gpt2_124M.bin"
    ln -sf "$PWD/data/kjv/kjv_bytes_train_000000.bin" "$llmc_run/dev/data/tinyshakespeare/tiny_shakespeare_train.bin"
    ln -sf "$PWD/data/kjv/kjv_bytes_val_000000.bin" "$llmc_run/dev/data/tinyshakespeare/tiny_shakespeare_val.bin"
fi
torch=${BENCH_TORCH:-1}
if [ "$torch" = 1 ] && ! "$PY" -c 'import torch' 2>/dev/null; then
    echo "note: $PY has no torch (Debian python3-torch): the PyTorch row is left out"
    torch=0
fi

median() { sort -n | awk '{a[NR] = $1} END { if (NR == 0) print "nan"; else print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
rss_mb() { grep 'Maximum resident' "$1" | awk '{printf "%.0f", $6 / 1024}'; }

# our runs: RUN = MODE (fp32) or MODE-bf16 (-mp bf16: bf16 matmuls through
# oneDNN, where this build has it)
runs="ln rms cbwc"
if rm -rf "$out/bf16probe" && bin/train_gpt2 -e d1c32h2v256t64 -mp bf16 -x 1 -v 0 -i "$train_glob" \
    -j "$val_glob" -o "$out/bf16probe" > /dev/null 2>&1; then
    runs="$runs ln-bf16 cbwc-bf16"
else
    echo "note: this build has no oneDNN (make NO_DNNL=1?): the bf16 rows are left out"
fi
run_ours() { # RUN ROUND
    /usr/bin/time -v -o "$out/ours_$1_$2.time" bin/train_gpt2 -e d12 -N "${1%-bf16}" \
        -mp "$([ "${1%-bf16}" = "$1" ] && echo fp32 || echo bf16)" -b 4 -t 64 -x $((steps + 2)) -v 0 \
        -i "$train_glob" -j "$val_glob" > "$out/ours_$1_$2.log"
}
run_llmc() { # ROUND
    (cd "$llmc_run" && /usr/bin/time -v -o "../llmc_$1.time" ./train_gpt2_steps > "../llmc_$1.log" 2>&1)
}
run_torch() { # ROUND; OpenBLAS's pthread pool ignores torch.set_num_threads (scripts/vit_bench.sh)
    OPENBLAS_NUM_THREADS=${TORCH_BLAS_THREADS:-1} /usr/bin/time -v -o "$out/torch_$1.time" \
        "$PY" dev/bench/torch_gpt2.py -i "$train_glob" --steps $((steps + 2)) --threads "$OMP_NUM_THREADS" \
        > "$out/torch_$1.log"
}
for r in $(seq 1 "$rounds"); do
    if [ -n "${LLMC_DIR:-}" ]; then echo "round $r: llm.c"; run_llmc "$r"; fi
    if [ "$torch" = 1 ]; then echo "round $r: PyTorch"; run_torch "$r"; fi
    for run in $runs; do echo "round $r: ours $run"; run_ours $run "$r"; done
done

# per-step figures from the progress lines, warmup steps dropped
ours_field() { # MODE FIELD(total|fwd|bwd|upd)
    cat "$out"/ours_"$1"_*.log | awk -v f="$2" '/^step/ { split($2, s, "/"); if (s[1] <= 2) next;
        for (i = 1; i <= NF; i++) { if ($i == "ms") t = $(i-1); if ($i == "(fwd") fw = $(i+1); if ($i == "bwd") bw = $(i+1); if ($i == "upd") up = $(i+1) }
        sub(/\)/, "", up); print (f == "total" ? t : f == "fwd" ? fw : f == "bwd" ? bw : up) }' | median
}
echo
echo "## GPT-2 124M (d12) training step, B=4 T=64 fp32 (the -bf16 rows: bf16 matmuls), $OMP_NUM_THREADS threads, median over $((steps * rounds)) steps"
echo
echo "| run | step ms | forward ms | backward ms | update ms | peak RSS MB | llm.c step / step | PyTorch step / step |"
echo "|-----|--------:|-----------:|------------:|----------:|------------:|------------------:|--------------------:|"
# "step N: train loss L (took X ms)" lines of llm.c and torch_gpt2.py, steps >= 2
took_ms() { cat "$@" | awk '/^step [0-9]+: train loss/ { if ($2 + 0 >= 2) print $(NF-1) }' | sed 's/(took //' | median; }
ratio() { [ -n "$1" ] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }' || echo "-"; }
llmc_ms="" torch_ms=""
[ -n "${LLMC_DIR:-}" ] && llmc_ms=$(took_ms "$out"/llmc_*.log)
[ "$torch" = 1 ] && torch_ms=$(took_ms "$out"/torch_*.log)
[ -n "$llmc_ms" ] && echo "| llm.c train_gpt2.c | $llmc_ms | | | | $(rss_mb "$out/llmc_1.time") | 1.00x | $(ratio "$torch_ms" "$llmc_ms") |"
[ -n "$torch_ms" ] && echo "| PyTorch $("$PY" -c 'import torch; print(torch.__version__)') (dev/bench/torch_gpt2.py) | $torch_ms | | | | $(rss_mb "$out/torch_1.time") | $(ratio "$llmc_ms" "$torch_ms") | 1.00x |"
for run in $runs; do
    t=$(ours_field $run total)
    echo "| foldnorm $run | $t | $(ours_field $run fwd) | $(ours_field $run bwd) | $(ours_field $run upd) | $(rss_mb "$out/ours_${run}_1.time") | $(ratio "$llmc_ms" "$t") | $(ratio "$torch_ms" "$t") |"
done
echo
echo "## The three modes side by side in one process (bench_gpt2: one step of each mode per round)"
echo
bin/bench_gpt2 -e d12 -b 4 -t 64 -r "${BENCH_MODE_ROUNDS:-12}" -w 2
echo
if [ "$runs" != "ln rms cbwc" ]; then
    echo "## bf16 matmuls vs fp32 in one process (bench_gpt2 -mp fp32,bf16)"
    echo
    bin/bench_gpt2 -e d12 -b 4 -t 64 -N ln,cbwc -mp fp32,bf16 -r "${BENCH_MODE_ROUNDS:-12}" -w 2
    echo
fi
echo "## AdamW over GPT-2 124M's parameters vs a copy"
echo
bin/bench_adamw
echo
echo "## Matmul libraries at d12's linear layers: OpenBLAS vs BLIS vs oneDNN (fp32), oneDNN bf16"
echo
make -s bench_gemm
bin/bench_gemm
echo
echo "## LayerNorm vs RMSNorm kernels, caches warm (arrays this size may stay in a large L3)"
echo
bin/bench_norms
echo
echo "## LayerNorm vs RMSNorm kernels, caches flushed before each op (every op from memory)"
echo
bin/bench_norms --flush -r 30
echo
echo "## Inference: folded vs LN (bench_fold: forward only, the two models interleaved)"
echo
bin/bench_fold -e d4c256h4v256t1024 -b "1 8" -t "64 256 1024" -r "${BENCH_FOLD_ROUNDS:-7}"
bin/bench_fold -e d4c256h4v256t2048 -b 1 -t 2048 -r 5
bin/bench_fold -e d12 -b 1 -t "64 256" -r 5
echo
echo "## Host augmentation (bench_augment: Swin-Tiny's 224 crops from 256, Fashion-MNIST flips)"
echo
bin/bench_augment -b 128 -r 6 -dw "$OMP_NUM_THREADS"
echo
echo "## Generation: KV cache vs full recompute (bench_sample: 256 greedy tokens after 64)"
echo
bin/bench_sample -e d12 -pl 64 -g "${BENCH_SAMPLE_TOKENS:-256}"
