#!/usr/bin/env bash
# GCIDE into Alpaca instruction data (tools/gcide_to_alpaca, llmc/text/gcide.c):
# the entry parser on hand-checked entries (bin/test_gcide); the real
# dictionary (Debian dict-gcide) gives tens of thousands of headwords, three
# records each, train and test split by headword with no word in both, and
# the JSON goes through bin/alpaca_to_sft into SFT shards; bad input exits 1
# naming the file or flag. bin/gcide_to_mc holds out the same headwords as
# a multiple-choice set that train_gpt2 -mc reads.
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

# the multiple-choice set (bin/gcide_to_mc): its answers are exactly gcide_to_alpaca's
# test headwords for the same -nh -tf (less those left out), never a train one;
# four distinct choices, the answer at every place; train_gpt2 -mc reads it
if bin/gcide_to_alpaca -nh 3000 -tf 0.1 $dict "$work/mc" > /dev/null 2>&1 &&
   bin/gcide_to_mc -nh 3000 -tf 0.1 -sd 5 $dict "$work/mc.bin" > "$work/mc.out" 2>&1; then
    left=$(grep -oE 'left out: [0-9]+ with too few of their part of speech, [0-9]+' "$work/mc.out" | grep -oE '[0-9]+' | paste -sd+ | bc)
    $PY - "$work/mc_train.json" "$work/mc_test.json" "$work/mc.bin.txt" "$left" <<'PYEOF' && ok "gcide_to_mc: $(grep -oE '[0-9]+ held out as examples' "$work/mc.out"), answers == gcide_to_alpaca's test headwords" || bad "gcide_to_mc's examples"
import json, re, sys
train, test = (json.load(open(p)) for p in sys.argv[1:3])
words = lambda rs: {m.group(1) for r in rs for m in [re.match(r'Define the word "(.*)"\.$', r["instruction"])] if m}
tw, vw = words(train), words(test)
rows = [l.split(" | ") for l in open(sys.argv[3]).read().splitlines()]
answers, places = set(), set()
for i, (head, *choices) in enumerate(rows):
    index, label, answer = head.split(" ", 2)
    assert int(index) == i and choices[int(label)] == answer and len({c.lower() for c in choices}) == 4, (head, choices)
    answers.add(answer); places.add(int(label))
assert answers <= vw and not answers & tw and len(answers) + int(sys.argv[4]) == len(vw), (len(answers), sys.argv[4], len(vw))
assert places == {0, 1, 2, 3}, places
PYEOF
else bad "gcide_to_mc on 3000 headwords: $(cat "$work/mc.out")"; fi
# -dh 1: the three others are held-out headwords too (never a train one), where -dh 0's
# are mostly train headwords (the control: otherwise the check would hold vacuously)
if bin/gcide_to_mc -nh 3000 -tf 0.1 -sd 5 -dh 1 $dict "$work/mc_dh.bin" > "$work/mc_dh.out" 2>&1; then
    $PY - "$work/mc_train.json" "$work/mc_test.json" "$work/mc_dh.bin.txt" "$work/mc.bin.txt" <<'PYEOF' && ok "gcide_to_mc -dh 1: every choice a held-out headword ($(grep -oE '[0-9]+ held out as examples' "$work/mc_dh.out"))" || bad "gcide_to_mc -dh 1's choices"
import json, re, sys
train, test = (json.load(open(p)) for p in sys.argv[1:3])
words = lambda rs: {m.group(1) for r in rs for m in [re.match(r'Define the word "(.*)"\.$', r["instruction"])] if m}
tw, vw = words(train), words(test)
choices = lambda path: [c for l in open(path).read().splitlines() for c in l.split(" | ")[1:]]
held, control = choices(sys.argv[3]), choices(sys.argv[4])
assert held and set(held) <= vw, sorted(set(held) - vw)[:5]
seen = sum(c in tw for c in control)
assert seen > len(control) / 2, (seen, len(control))  # -dh 0: most others are train headwords
PYEOF
else bad "gcide_to_mc -dh 1 on 3000 headwords: $(cat "$work/mc_dh.out")"; fi
cat llmc/*/*.c > "$work/text.txt"
bin/text_to_shard "$work/text.txt" "$work/bytes" 0.1 > /dev/null
bin/gcide_to_mc -nh 400 -tf 0.1 -t 64 $dict "$work/mc_small.bin" > /dev/null 2>&1
acc=$(bin/train_gpt2 -e d1c32h2v50257t64 -i "$work/bytes_train_*.bin" -j "$work/bytes_val_*.bin" -b 2 -t 64 -x 0 -v 1 -m 1 \
      -mc "$work/mc_small.bin" 2>&1 | grep -oE '^multiple-choice accuracy [0-9.]+' | cut -d' ' -f3)
awk -v a="$acc" 'BEGIN { exit !(a >= 0 && a <= 1) }' && ok "train_gpt2 -mc reads it (an untrained model: accuracy $acc)" ||
    bad "train_gpt2 -mc on gcide_to_mc's file: '$acc'"

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
