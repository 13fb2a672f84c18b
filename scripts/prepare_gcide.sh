#!/usr/bin/env bash
# Webster's 1913 via GCIDE (Debian dict-gcide, the dictd database) into GPT-2
# BPE token shards: data/gcide/gcide_{train,val}_*.bin, one document per
# dictionary entry (a headword line "Word \\pron\\ ..." after a blank
# line), val = the last 5% of tokens, shards of 2097152 tokens (about 16M
# tokens in all). A no-op when the shards exist.
set -euo pipefail
cd "$(dirname "$0")/.."
out=data/gcide
if ls $out/gcide_train_*.bin >/dev/null 2>&1 && ls $out/gcide_val_*.bin >/dev/null 2>&1; then
    exit 0
fi
src=/usr/share/dictd/gcide.dict.dz
[ -f $src ] || { echo "error: $src not found: run make deps (Debian dict-gcide)" >&2; exit 1; }
[ -f data/gpt2/encoder.json ] || scripts/deps/data.sh
[ -x bin/bpe_shards ] || make -s bpe_shards
mkdir -p $out
# the dictd text; an unindented "Headword \\pron\\" line after a blank line starts an entry
zcat $src | awk 'prev == "" && /^[^ \t].* \\[^\\]*\\/ && NR > 1 { printf "<|endoftext|>" }
                 { print; prev = $0 }' > $out/gcide.txt
bin/bpe_shards $out/gcide.txt $out/gcide 0.05 2097152
