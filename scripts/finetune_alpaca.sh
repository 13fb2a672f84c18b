#!/usr/bin/env bash
# Supervised fine-tuning on Stanford Alpaca-format data (a JSON list of
# {"instruction", "input", "output"}), the loss on response tokens only:
#   scripts/finetune_alpaca.sh ALPACA.json MODEL OUTDIR [train_gpt2 flags...]
# ALPACA.json: e.g. the user's alpaca_data.json; MODEL: a GPT-2 checkpoint
# (llm.c model file with V = 50257, e.g. OUTDIR/model_*.bin of a KJV run or
# llm.c's gpt2_124M.bin) or a descriptor such as d4c128h4v50257t256.
# Converts to SFT shards in OUTDIR (the last 5% of records for val; at
# least one, up to 4 of a small set), then trains; extra flags go to
# train_gpt2 (defaults: -b 4 -t 256 -x 200 -l 1e-4 -v 20 -m 10 -s 100; on a
# data set too small for one such batch, such as the README's
# test/fixtures/alpaca_fixture.json, -b and then -t shrink until a batch
# fits the smaller shard; a model file's maxT caps -t). Env SFT_T sets the
# context, SFT_VAL the number of val records.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 3 ]; then
    sed -n 2,14p "$0" | sed 's/^# \{0,1\}//' >&2
    exit 1
fi
json=$1 model=$2 out=$3; shift 3
T=${SFT_T:-256}
# a model file's maxT (header slot 2) caps the context
if [ -f "$model" ]; then
    maxT=$(od -An -t d4 -j 8 -N 4 "$model" | tr -d ' ')
    [ "$maxT" -gt 0 ] 2>/dev/null && [ "$T" -gt "$maxT" ] && T=$maxT
fi
[ -f data/gpt2/encoder.json ] || scripts/deps/data.sh
[ -x bin/alpaca_to_sft ] && [ -x bin/train_gpt2 ] || make -s alpaca_to_sft train_gpt2
[ -f "$json" ] || { echo "error: $json: no such Alpaca JSON file" >&2; exit 1; }
mkdir -p "$out"
records=$(grep -o '"instruction"' "$json" | wc -l)
# 5% for val; at least 1, and up to 4 while that is under a quarter (small sets)
small_val=$(( records / 4 < 4 ? records / 4 : 4 ))
val=${SFT_VAL:-$(( records / 20 > small_val ? records / 20 : small_val > 0 ? small_val : 1 ))}
bin/alpaca_to_sft -t "$T" "$json" "$out/sft" "$val"
# one batch takes B*T+1 tokens of a shard (header slot 2 holds its token count)
tokens() { od -An -t d4 -j 8 -N 4 "$1" | tr -d ' '; }
fit=$(tokens "$out/sft_val_000000.bin")
for f in "$out"/sft_train_*.bin; do n=$(tokens "$f"); [ "$n" -lt "$fit" ] && fit=$n; done
B=4
while [ $((B * T + 1)) -gt "$fit" ] && [ $B -gt 1 ]; do B=$((B / 2)); done
while [ $((B * T + 1)) -gt "$fit" ] && [ "$T" -gt 8 ]; do T=$((T / 2)); done
[ "$B" -eq 4 ] && [ "$T" -eq "${SFT_T:-256}" ] ||
    echo "finetune_alpaca.sh: for this model and data set (smallest shard $fit tokens): -b $B -t $T" >&2
bin/train_gpt2 -e "$model" -i "$out/sft_train_*.bin" -j "$out/sft_val_*.bin" -sft 1 \
    -b "$B" -t "$T" -x 200 -l 1e-4 -v 20 -m 10 -s 100 -o "$out" "$@"
