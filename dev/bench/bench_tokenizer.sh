#!/usr/bin/env bash
# GPT-2 encode throughput on the whole KJV, single thread, side by side in
# one run: llmc/text/tokenizer (C, PCRE2 JIT) vs gpt-3-encoder's JavaScript
# encoder (Node.js), both timed around encoding only (no file or vocabulary
# loading), one cold pass each; C's best warm pass too. Checks the ids agree.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -f data/kjv/kjv_books.txt ] || scripts/prepare_kjv.sh > /dev/null
[ -x bin/bench_tokenizer ] || make -s bench_tokenizer
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
sed 's/<|endoftext|>//' data/kjv/kjv_books.txt > "$work/kjv.txt"
read -r c_cold c_warm bytes tokens < <(OMP_NUM_THREADS=1 taskset -c 0 bin/bench_tokenizer "$work/kjv.txt" 3)
js_s=$(taskset -c 0 node dev/data/gpt3_encoder_ids.js --time "$work/kjv.txt" 2>&1 >"$work/js.ids" | cut -d' ' -f1)
bin/tokenizer encode "$work/kjv.txt" | cmp -s - "$work/js.ids" || { echo "error: the ids differ" >&2; exit 1; }
awk -v nv="$(node --version)" -v b="$bytes" -v n="$tokens" -v cc="$c_cold" -v cw="$c_warm" -v js="$js_s" 'BEGIN {
    printf "KJV: %.2f MB, %d tokens (ids identical)\n", b / 1e6, n
    printf "| encoder | seconds | MB/s | vs gpt-3-encoder |\n|---|---:|---:|---:|\n"
    printf "| gpt-3-encoder 1.1.4 (Node.js %s) | %.3f | %.2f | 1x |\n", nv, js, b / 1e6 / js
    printf "| llmc/text/tokenizer, cold cache | %.3f | %.2f | %.1fx |\n", cc, b / 1e6 / cc, js / cc
    printf "| llmc/text/tokenizer, warm cache (best of 3) | %.3f | %.2f | %.1fx |\n", cw, b / 1e6 / cw, js / cw
}'
