#!/usr/bin/env bash
# Supervised fine-tuning on Stanford Alpaca-format data (a JSON list of
# {"instruction", "input", "output"}), the loss on response tokens only:
#   scripts/finetune_alpaca.sh ALPACA.json MODEL OUTDIR [train_gpt2 flags...]
# ALPACA.json: e.g. the user's alpaca_data.json; MODEL: a GPT-2 checkpoint
# (llm.c model file with V = 50257, e.g. OUTDIR/model_*.bin of a KJV run or
# llm.c's gpt2_124M.bin) or a descriptor such as d4c128h4v50257t256.
# Converts to SFT shards in OUTDIR (the last 5% of records, at least one,
# for val), then trains; extra flags go to train_gpt2 (defaults: -b 4
# -t 256 -x 200 -l 1e-4 -v 20 -m 10 -s 100). Env SFT_T sets the context,
# SFT_VAL the number of val records.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 3 ]; then
    sed -n 2,11p "$0" | sed 's/^# \{0,1\}//' >&2
    exit 1
fi
json=$1 model=$2 out=$3; shift 3
T=${SFT_T:-256}
[ -f data/gpt2/encoder.json ] || scripts/deps/data.sh
[ -x bin/alpaca_to_sft ] && [ -x bin/train_gpt2 ] || make -s alpaca_to_sft train_gpt2
[ -f "$json" ] || { echo "error: $json: no such Alpaca JSON file" >&2; exit 1; }
mkdir -p "$out"
records=$(grep -o '"instruction"' "$json" | wc -l)
val=${SFT_VAL:-$(( records / 20 > 0 ? records / 20 : 1 ))}
bin/alpaca_to_sft -t "$T" "$json" "$out/sft" "$val"
bin/train_gpt2 -e "$model" -i "$out/sft_train_*.bin" -j "$out/sft_val_*.bin" -sft 1 \
    -b 4 -t "$T" -x 200 -l 1e-4 -v 20 -m 10 -s 100 -o "$out" "$@"
