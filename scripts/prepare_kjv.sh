#!/usr/bin/env bash
# King James Bible (Debian bible-kjv) into GPT-2 BPE token shards:
# data/kjv/kjv_{train,val}_*.bin, one document per book (each starts with
# <|endoftext|>), verse references stripped, val = the last 5% of tokens,
# shards of 262144 tokens. A no-op when the shards exist.
set -euo pipefail
cd "$(dirname "$0")/.."
out=data/kjv
if ls $out/kjv_train_*.bin >/dev/null 2>&1 && ls $out/kjv_val_*.bin >/dev/null 2>&1; then
    exit 0
fi
command -v bible >/dev/null || { echo "error: 'bible' not found: run make deps (Debian bible-kjv)" >&2; exit 1; }
[ -f data/gpt2/encoder.json ] || scripts/deps/data.sh
[ -x bin/bpe_shards ] || make -s bpe_shards
mkdir -p $out
t0=$(date +%s%N)
# -f prints one verse a line as "Ge1:1 text"; a new book abbreviation starts a document
bible -f "Gen1:1-Rev22:21" | awk '
    { match($0, /^[1-4]?[A-Za-z]+/); book = substr($0, 1, RLENGTH)
      if (NR > 1 && book != prev) print "<|endoftext|>"
      prev = book; sub(/^[1-4]?[A-Za-z]+[0-9]+:[0-9]+ /, ""); print }' > $out/kjv_books.txt
bin/bpe_shards $out/kjv_books.txt $out/kjv 0.05 262144
echo "KJV shards ready in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
