#!/usr/bin/env bash
# King James Bible from Debian's bible-kjv into byte-level token shards:
# data/kjv/kjv_bytes_{train,val}_*.bin (V = 256, val = the last 5%).
set -euo pipefail
cd "$(dirname "$0")/.."
out=data/kjv
if ls $out/kjv_bytes_train_*.bin >/dev/null 2>&1 && [ -f $out/kjv_bytes_val_000000.bin ]; then
    exit 0
fi
command -v bible >/dev/null || { echo "error: 'bible' not found: run make deps (Debian bible-kjv)" >&2; exit 1; }
[ -x bin/text_to_shard ] || make -s text_to_shard
mkdir -p $out
# -f prints one verse a line as "Ge1:1 text"; drop the reference
bible -f "Gen1:1-Rev22:21" | sed -E 's/^[1-4]?[A-Za-z]+[0-9]+:[0-9]+ //' > $out/kjv.txt
echo "KJV text: $(wc -c < $out/kjv.txt) bytes"
bin/text_to_shard $out/kjv.txt $out/kjv_bytes 0.05
