#!/usr/bin/env bash
# Alpaca SFT: the converter's shards (tokens + loss mask) hold exactly the
# prompt/response split of the template; the masked loss matches the
# PyTorch reference in every mode; fine-tuning a GPT-2-vocabulary checkpoint
# on the fixture through scripts/finetune_alpaca.sh makes the loss fall in
# every mode; bad Alpaca input gives clear errors; -sk 1 leaves out over-long
# records instead.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/data_sft
rm -rf "$work"; mkdir -p "$work"
seed=${FOLDNORM_TEST_SEED:-$RANDOM}
echo "seed $seed"
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
fixture=test/fixtures/alpaca_fixture.json

# 1. masked loss vs the PyTorch reference (random prefixes of each row masked)
for mode in ln rms cbwc; do
    /usr/bin/python3 dev/reference/gpt2.py --mode $mode --seed $((seed + 10)) --mask --steps 3 \
        --model "$work/m_$mode.bin" --state "$work/s_$mode.bin" > "$work/ref_$mode.out" 2>&1 &&
    bin/test_gpt2 "$work/m_$mode.bin" "$work/s_$mode.bin" > "$work/test_$mode.out" 2>&1 \
        && echo "ok   $mode: masked loss, gradients and 3 steps match the reference" \
        || { fail "$mode: masked loss vs reference"; tail -5 "$work/test_$mode.out"; }
done
# the mask must matter: the unmasked reference loss differs
/usr/bin/python3 dev/reference/gpt2.py --mode ln --seed $((seed + 10)) > "$work/ref_nomask.out" 2>&1
l_mask=$(grep -oE 'loss0 [0-9.]+' "$work/ref_ln.out" | cut -d' ' -f2)
l_full=$(grep -oE 'loss0 [0-9.]+' "$work/ref_nomask.out" | cut -d' ' -f2)
[ -n "$l_mask" ] && [ "$l_mask" != "$l_full" ] && echo "ok   masked loss $l_mask != unmasked $l_full" \
    || fail "masked loss ($l_mask) equals the unmasked one ($l_full)"

# 2. the converter: response tokens (mask 1) decode to exactly the outputs + <|endoftext|>
bin/alpaca_to_sft -t 128 $fixture "$work/fx" 0 > /dev/null || fail "alpaca_to_sft on the fixture"
n=$(od -An -t d4 -j 8 -N 4 "$work/fx_train_000000.bin" | xargs)
od -An -v -t u2 -j 1024 -N $((2 * n)) "$work/fx_train_000000.bin" | xargs -n1 > "$work/tokens.txt"
od -An -v -t u1 -j $((1024 + 2 * n)) -N "$n" "$work/fx_train_000000.bin" | xargs -n1 > "$work/mask.txt"
paste -d' ' "$work/tokens.txt" "$work/mask.txt" | awk '$2 == 1 { printf "%s ", $1 }' > "$work/response.ids"
bin/tokenizer decode "$work/response.ids" > "$work/response.txt"
/usr/bin/python3 -c "
import json, sys
recs = json.load(open('$fixture'))
sys.stdout.write(''.join(r['output'] + '<|endoftext|>' for r in recs))" > "$work/expected_response.txt"
cmp -s "$work/response.txt" "$work/expected_response.txt" \
    && echo "ok   converter: the $n tokens' loss mask selects exactly the outputs" \
    || fail "converter: masked-in tokens do not decode to the outputs"
paste -d' ' "$work/tokens.txt" "$work/mask.txt" | awk '$2 == 0 { printf "%s ", $1 }' > "$work/prompt.ids"
bin/tokenizer decode "$work/prompt.ids" | grep -c "### Response:" | grep -qx 16 \
    && echo "ok   converter: 16 prompts with the Alpaca template, masked out" || fail "converter: prompts"

# 3. fine-tune a GPT-2-vocabulary checkpoint on the fixture: the loss falls
bin/train_gpt2 -e d2c64h4v50257t128 -i "$work/fx_train_000000.bin" -v 0 -x 1 -b 2 -t 32 \
    -sd $((seed % 100000)) -o "$work/base" > "$work/base.out" 2>&1 || fail "making the base checkpoint"
for mode in ln rms cbwc; do
    SFT_T=128 SFT_VAL=4 scripts/finetune_alpaca.sh $fixture "$work/base/model_00000001.bin" "$work/ft_$mode" \
        -N $mode -b 1 -x 30 -l 3e-3 -v 30 -m 1 -s 0 -sd $((seed % 100000)) > "$work/ft_$mode.out" 2>&1 \
        || { fail "$mode: finetune_alpaca.sh"; tail -5 "$work/ft_$mode.out"; continue; }
    grep -q "SFT: loss on response tokens only" "$work/ft_$mode.out" || fail "$mode: not an SFT run"
    first=$(grep -oE '^s:[1-5] trl:[0-9.]+' "$work/ft_$mode/main.log" | cut -d: -f3 | awk '{s += $1} END {print s / NR}')
    last=$(grep -oE '^s:(2[6-9]|30) trl:[0-9.]+' "$work/ft_$mode/main.log" | cut -d: -f3 | awk '{s += $1} END {print s / NR}')
    awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 0.5) }' \
        && echo "ok   $mode: SFT loss falls (mean of steps 1-5 $first -> steps 26-30 $last)" \
        || fail "$mode: SFT loss did not fall ($first -> $last)"
done

# sampling from the fine-tuned checkpoint: same seed -> same text, greedy ignores the seed
m=$work/ft_ln/model_00000030.bin
if [ -f "$m" ]; then
    a=$(bin/sample -e "$m" -p "Name the capital" -g 16 -tk 40 -sd $seed)
    b=$(bin/sample -e "$m" -p "Name the capital" -g 16 -tk 40 -sd $seed)
    c=$(bin/sample -e "$m" -p "Name the capital" -g 16 -tk 40 -sd $((seed + 1)))
    g1=$(bin/sample -e "$m" -p "Name the capital" -g 16 -tp 0 -sd 1)
    g2=$(bin/sample -e "$m" -p "Name the capital" -g 16 -tp 0 -sd 2)
    [ -n "$a" ] && [ "$a" = "$b" ] && echo "ok   sample: same seed, same text" || fail "sample: same seed gave different text"
    [ "$a" != "$c" ] && echo "ok   sample: another seed, other text" || fail "sample: the seed changes nothing"
    [ "$g1" = "$g2" ] && echo "ok   sample: temperature 0 is greedy" || fail "sample: -tp 0 depends on the seed"
    bin/train_gpt2 -e "$m" -i "$work/fx_train_000000.bin" -v 0 -x 1 -b 1 -t 128 -s 1 -g 8 > "$work/s.out" 2>&1 \
        && grep -q "^sample: " "$work/s.out" && echo "ok   train_gpt2 -s prints a decoded sample" \
        || fail "train_gpt2 -s: no decoded sample"
fi

# 4. bad input: clear error, non-zero exit
expect_error() { # NAME PATTERN COMMAND...
    local name=$1 pattern=$2; shift 2
    local out; out=$("$@" 2>&1); local rc=$?
    if [ $rc -ne 0 ] && echo "$out" | grep -qE "$pattern"; then echo "ok   $name: $(echo "$out" | tail -1)"
    else fail "$name: rc $rc, output: $out"; fi
}
printf '[{"instruction": "a", "output": "b"},' > "$work/malformed.json"
printf '[{"instruction": "a"}]' > "$work/no_output.json"
printf '[{"output": "b"}]' > "$work/no_instruction.json"
printf '[{"instruction": 3, "output": "b"}]' > "$work/not_string.json"
printf '{"instruction": "a", "output": "b"}' > "$work/not_list.json"
/usr/bin/python3 -c "import json; print(json.dumps([{'instruction': 'x', 'output': 'word ' * 300}]))" > "$work/long.json"
expect_error malformed_json "malformed.json.*malformed JSON" bin/alpaca_to_sft "$work/malformed.json" "$work/o" 0
expect_error missing_output "no_output.json.*record 0.*\"output\"" bin/alpaca_to_sft "$work/no_output.json" "$work/o" 0
expect_error missing_instruction "record 0.*\"instruction\"" bin/alpaca_to_sft "$work/no_instruction.json" "$work/o" 0
expect_error field_not_string "\"instruction\" is not a string" bin/alpaca_to_sft "$work/not_string.json" "$work/o" 0
expect_error not_a_list "expected a JSON list" bin/alpaca_to_sft "$work/not_list.json" "$work/o" 0
expect_error record_too_long "record 0 is [0-9]+ tokens, longer than the context of 64" bin/alpaca_to_sft -t 64 "$work/long.json" "$work/o" 0
expect_error missing_encoder "encoder.json.*cannot open" bin/alpaca_to_sft -vd "$work/nowhere" $fixture "$work/o" 0
# -sk 1: the over-long record left out and counted, the short ones kept
/usr/bin/python3 -c "import json; print(json.dumps([{'instruction': 'x', 'input': '', 'output': 'a'}, {'instruction': 'x', 'output': 'word ' * 300}, {'instruction': 'y', 'input': '', 'output': 'b'}]))" > "$work/mixed.json"
out=$(bin/alpaca_to_sft -sk 1 -t 64 "$work/mixed.json" "$work/sk" 0 2>&1) &&
    grep -q "left out 1 of 3 records longer than 64 tokens" <<< "$out" &&
    /usr/bin/python3 -c "import json; r = json.load(open('$work/mixed.json')); print(json.dumps([r[0], r[2]]))" > "$work/short.json" &&
    bin/alpaca_to_sft -t 64 "$work/short.json" "$work/sk2" 0 > /dev/null &&
    cmp -s "$work/sk_train_000000.bin" "$work/sk2_train_000000.bin" &&
    echo "ok   -sk 1 leaves out the long record: the same shard as without it" ||
    fail "alpaca_to_sft -sk 1: $out"
bin/text_to_shard $fixture "$work/plain" 0.1 > /dev/null
expect_error sft_flag_plain "not SFT shards" bin/train_gpt2 -e d2c64h4v50257t64 -i "$work/plain_train_*.bin" -sft 1 -v 0 -x 1 -b 2 -t 32
echo "$fails failed"
[ $fails -eq 0 ]
