#!/usr/bin/env bash
# GCIDE into Alpaca instruction data (tools/gcide_to_alpaca, llmc/text/gcide.c):
# the entry parser on hand-checked entries (bin/test_gcide); the real
# dictionary (Debian dict-gcide) gives tens of thousands of headwords, three
# records each, train and test split by headword with no word in both, and
# the JSON goes through bin/alpaca_to_sft into SFT shards; bad input exits 1
# naming the file or flag.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/data_gcide
rm -rf "$work"; mkdir -p "$work"
PY=${PYTHON:-/usr/bin/python3}
dict=/usr/share/dictd/gcide.dict.dz
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

if bin/test_gcide > "$work/unit.out" 2>&1; then ok "entry parser (bin/test_gcide)"
else bad "bin/test_gcide:"; cat "$work/unit.out"; fi

if bin/gcide_to_alpaca $dict "$work/g" > "$work/all.out" 2>&1; then ok "$(cat "$work/all.out")"
else bad "gcide_to_alpaca on $dict: $(cat "$work/all.out")"; fi
$PY - "$work/g_train.json" "$work/g_test.json" <<'PYEOF' && ok "splits checked" || bad "splits"
import json, re, sys
train, test = (json.load(open(p)) for p in sys.argv[1:3])
def headwords(records):
    words = set()
    for r in records:
        m = re.match(r'Define the word "(.*)"\.$', r["instruction"])
        if m: words.add(m.group(1))
    return words
tw, vw = headwords(train), headwords(test)
assert len(tw) > 50000, f"only {len(tw)} train headwords"
frac = len(vw) / (len(tw) + len(vw))
assert 0.03 < frac < 0.07, f"test fraction {frac:.3f}, asked for 0.05"
assert not tw & vw, f"{len(tw & vw)} headwords in both splits, e.g. {sorted(tw & vw)[:3]}"
for name, records, words in (("train", train, tw), ("test", test, vw)):
    assert len(records) == 3 * len(words), f"{name}: {len(records)} records for {len(words)} words"
    for r in records:
        assert set(r) == {"instruction", "input", "output"} and r["output"].strip(), r
    # the reverse task's answer is one of the split's own headwords
    rev = [r for r in records if r["instruction"] == "Which word has this meaning?"]
    assert rev and all(r["output"] in words for r in rev), name
print(f"{len(tw)} train / {len(vw)} test headwords ({frac:.3f}), no overlap, 3 records each")
PYEOF

# a small set through the SFT converter and the trainer's loader
if bin/gcide_to_alpaca -nh 200 -tf 0.1 $dict "$work/small" > /dev/null 2>&1 &&
   bin/alpaca_to_sft -t 256 "$work/small_train.json" "$work/sft" 20 > "$work/sft.out" 2>&1 &&
   [ -s "$work/sft_train_000000.bin" ] && [ -s "$work/sft_val_000000.bin" ]; then ok "alpaca_to_sft accepts the records"
else bad "alpaca_to_sft on 200 headwords: $(cat "$work/sft.out")"; fi

expect_error() { # NAME PATTERN COMMAND...
    local name=$1 pattern=$2; shift 2
    local out rc
    out=$("$@" 2>&1); rc=$?
    if [ $rc -eq 1 ] && grep -q -- "$pattern" <<< "$out"; then ok "$name"; else bad "$name (exit $rc): $out"; fi
}
head -c 3000 $dict > "$work/truncated.dz"
printf 'no entries here\njust text\n' > "$work/plain.txt"
expect_error "missing dictionary" "missing.dz" bin/gcide_to_alpaca "$work/missing.dz" "$work/o"
expect_error "truncated dictzip" "truncated.dz" bin/gcide_to_alpaca "$work/truncated.dz" "$work/o"
expect_error "text without entries" "plain.txt.*no dictionary entries" bin/gcide_to_alpaca "$work/plain.txt" "$work/o"
expect_error "test fraction out of range" "-tf" bin/gcide_to_alpaca -tf 1.5 $dict "$work/o"
expect_error "unknown flag" "-q" bin/gcide_to_alpaca -q 1 $dict "$work/o"
[ ! -e "$work/o_train.json" ] && ok "no output after errors" || bad "an error left output behind"
[ $fails -eq 0 ]
