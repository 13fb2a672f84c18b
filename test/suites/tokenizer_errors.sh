#!/usr/bin/env bash
# Bad tokenizer input: missing or malformed encoder.json / vocab.bpe, ids
# outside the vocabulary or not numbers: a clear error naming the file,
# non-zero exit, no crash.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/tokenizer_errors
rm -rf "$work"; mkdir -p "$work"
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
expect_error() { # NAME PATTERN COMMAND...
    local name=$1 pattern=$2; shift 2
    local out; out=$("$@" 2>&1); local rc=$?
    if [ $rc -ne 0 ] && [ $rc -lt 128 ] && echo "$out" | grep -qE "$pattern"; then echo "ok   $name: $(echo "$out" | tail -1)"
    else fail "$name: rc $rc, output: $out"; fi
}
echo hello > "$work/text.txt"
mk() { mkdir -p "$work/$1"; cp data/gpt2/vocab.bpe data/gpt2/encoder.json "$work/$1/"; }
mk missing_merges; rm "$work/missing_merges/vocab.bpe"
mk bad_json; head -c 5000 data/gpt2/encoder.json > "$work/bad_json/encoder.json"
mk not_object; echo '[1, 2, 3]' > "$work/not_object/encoder.json"
mk dup_id; sed -i 's/"!": 0,/"!": 1,/' "$work/dup_id/encoder.json"
mk bad_merge; sed -i '3s/.*/Ġt zzzzunknown/' "$work/bad_merge/vocab.bpe"
mk bad_line; sed -i '5s/.*/onlyonetoken/' "$work/bad_line/vocab.bpe"
expect_error missing_encoder "nowhere/encoder.json: cannot open" bin/tokenizer -vd "$work/nowhere" encode "$work/text.txt"
expect_error missing_merges "vocab.bpe: cannot open" bin/tokenizer -vd "$work/missing_merges" encode "$work/text.txt"
expect_error truncated_json "encoder.json: not a JSON object" bin/tokenizer -vd "$work/bad_json" encode "$work/text.txt"
expect_error json_not_object "encoder.json: not a JSON object" bin/tokenizer -vd "$work/not_object" encode "$work/text.txt"
expect_error duplicate_id "encoder.json: id 1 is given to two tokens" bin/tokenizer -vd "$work/dup_id" encode "$work/text.txt"
expect_error unknown_merge "vocab.bpe:3: merge .* not in encoder.json" bin/tokenizer -vd "$work/bad_merge" encode "$work/text.txt"
expect_error bad_merge_line "vocab.bpe:5: expected a merge" bin/tokenizer -vd "$work/bad_line" encode "$work/text.txt"
echo "15496 50257" > "$work/oob.ids"; echo "15496 x12" > "$work/nan.ids"
expect_error id_out_of_range "oob.ids: token id 50257 at position 1 is outside" bin/tokenizer decode "$work/oob.ids"
expect_error id_not_number "nan.ids: expected token ids" bin/tokenizer decode "$work/nan.ids"
expect_error missing_input "nothere.txt: cannot open" bin/tokenizer encode "$work/nothere.txt"
expect_error bad_command "unknown command 'frobnicate'" bin/tokenizer frobnicate "$work/text.txt"
echo "$fails failed"
[ $fails -eq 0 ]
