#!/usr/bin/env bash
# GPT-2 tokenizer (bin/tokenizer) vs gpt-3-encoder's own JavaScript encoder,
# token for token: the whole King James Bible, a random 300 kB window of
# GCIDE, seeded adversarial text; and decode(encode(x)) == x for random
# bytes (invalid UTF-8 included), the adversarial text and the KJV.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/tokenizer_parity
rm -rf "$work"; mkdir -p "$work"
seed=${FOLDNORM_TEST_SEED:-$RANDOM}
echo "seed $seed"
js=dev/data/gpt3_encoder_ids.js
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
# parity NAME FILE: ids of bin/tokenizer and of gpt-3-encoder must be equal
parity() {
    bin/tokenizer encode "$2" > "$work/$1.c.ids" || { fail "$1: tokenizer encode failed"; return; }
    node $js "$2" > "$work/$1.js.ids" || { fail "$1: gpt-3-encoder failed"; return; }
    local n; n=$(wc -w < "$work/$1.c.ids")
    if cmp -s "$work/$1.c.ids" "$work/$1.js.ids"; then
        echo "ok   $1: $(wc -c < "$2") bytes -> $n tokens, identical to gpt-3-encoder"
    else
        local at; at=$(cmp <(tr ' ' '\n' < "$work/$1.c.ids") <(tr ' ' '\n' < "$work/$1.js.ids") | grep -oE 'line [0-9]+')
        fail "$1: ids differ from gpt-3-encoder (first difference at token ${at#line })"
    fi
}
roundtrip() {
    bin/tokenizer encode "$2" > "$work/$1.rt.ids" && bin/tokenizer decode "$work/$1.rt.ids" > "$work/$1.rt.out" \
        || { fail "$1: encode/decode failed"; return; }
    cmp -s "$2" "$work/$1.rt.out" && echo "ok   $1: decode(encode(x)) == x ($(wc -c < "$2") bytes)" \
        || fail "$1: decode(encode(x)) != x"
}

bible -f "Gen1:1-Rev22:21" | sed -E 's/^[1-4]?[A-Za-z]+[0-9]+:[0-9]+ //' > "$work/kjv.txt"
parity kjv "$work/kjv.txt"
roundtrip kjv "$work/kjv.txt"

gcide=/usr/share/dictd/gcide.dict.dz
size=$(zcat $gcide | wc -c)
offset=$(( (seed * 7919) % (size - 300000) ))
zcat $gcide | tail -c +$((offset + 1)) | head -c 300000 | iconv -c -f utf-8 -t utf-8 > "$work/gcide.txt"
echo "     gcide window at byte $offset"
parity gcide "$work/gcide.txt"

for k in 1 2 3; do
    node dev/data/adversarial_text.js $((seed + k)) 40000 > "$work/adversarial$k.txt"
    parity "adversarial$k" "$work/adversarial$k.txt"
    roundtrip "adversarial$k" "$work/adversarial$k.txt"
done
# edge cases one by one: each file alone (start and end of text matter)
i=0
for s in "" " " "  " "\n" " \n " "a" "'s" "''s" " 's" "  hello  " "hello\n\n\nworld  " "x\t\ty" \
         "123456789 12" "<|endoftext|>" "  ó" "\xf0\x9f\x98\x80\xf0\x9f\x98\x80 a" \
         "$(printf 'a%.0s' {1..3000})" "x$(printf ' %.0s' {1..3000})y" "$(printf '9%.0s' {1..999})" \
         "$(printf '!?%.0s' {1..700})"; do
    printf "$s" > "$work/edge$i.txt"
    bin/tokenizer encode "$work/edge$i.txt" > "$work/edge$i.c" && node $js "$work/edge$i.txt" > "$work/edge$i.js" \
        && cmp -s "$work/edge$i.c" "$work/edge$i.js" || fail "edge case '$s': ids differ"
    i=$((i + 1))
done
echo "ok   $i edge cases checked"

perl -e "srand($seed); print map { chr(int(rand(256))) } 1..200000" > "$work/random.bin"
roundtrip random_bytes "$work/random.bin"
perl -e "srand($seed + 1); print map { chr(128 + int(rand(128))) } 1..5000" > "$work/high.bin"
roundtrip high_bytes "$work/high.bin"

bin/tokenizer bin "$work/gpt2_tokenizer.bin" || fail "tokenizer bin failed"
magic=$(od -An -t d4 -N 16 "$work/gpt2_tokenizer.bin" | xargs)
[ "$magic" = "20240328 2 50257 50256" ] && echo "ok   gpt2_tokenizer.bin header: $magic" \
    || fail "gpt2_tokenizer.bin header is '$magic'"
echo "$fails failed"
[ $fails -eq 0 ]
