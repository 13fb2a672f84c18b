#!/usr/bin/env bash
# The command line of every program in bin/ (llmc/core/cli.h, docs/cli.md):
#   - -h prints the help to stdout (nothing on stderr) and exits 0;
#   - every flag the help lists is accepted with a valid value taken from its
#     listed type and range (FOLDNORM_CLI_DRY_RUN=1: parse, check, print the
#     values, exit 0 without running);
#   - a value below the range of each numeric flag (or a word outside a
#     choice) is refused with exit 1 and an error naming the flag;
#   - options after the positional arguments, unknown flags, missing values;
#   - a flag named twice in a program's table is a bug the parser refuses;
#   - short real runs of the trainers with most flags at once, -o creating
#     missing parent folders.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/cli
mkdir -p "$work"
fails=0
checks=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { checks=$((checks + 1)); }

[ -x bin/train_gpt2 ] && [ -x bin/train_vit ] || make -s cpu

# expect_refused NAME FLAG COMMAND...: exit 1 and FLAG named on stderr
expect_refused() {
    local name=$1 flag=$2; shift 2
    "$@" > "$work/out.txt" 2> "$work/err.txt"
    local rc=$?
    if [ $rc -eq 1 ] && grep -q -- "$flag" "$work/err.txt"; then
        ok
    else
        fail "$name: expected exit 1 naming $flag, got exit $rc: $(head -c 300 "$work/err.txt")"
    fi
}

# valid_value TYPE: a value inside the help's "<TYPE>" (empty for a switch)
valid_value() {
    case $1 in
    "") echo "" ;;
    "0|1") echo 1 ;;
    seed) echo 7 ;;
    *" in "*)
        local range=${1#* in } lo hi
        lo=${range:1}; lo=${lo%%,*}
        hi=${range#*, }; hi=${hi%?}
        if [ "${range:0:1}" = "[" ]; then echo "$lo";
        elif [ "${range: -1}" = "]" ]; then echo "$hi";
        else awk -v a="$lo" -v b="$hi" 'BEGIN { print (a + b) / 2 }'; fi ;;
    *"|"*) echo "${1%%|*}" ;;
    *) echo "x" ;;
    esac
}

# invalid_value TYPE: a value outside the range (empty: the type has none)
invalid_value() {
    case $1 in
    "0|1") echo 2 ;;
    seed) echo -1 ;;
    *" in "*)
        local range=${1#* in } lo
        lo=${range:1}; lo=${lo%%,*}
        awk -v a="$lo" 'BEGIN { print a - 1 }' ;;
    *"|"*) echo "no-such-choice" ;;
    *) echo "" ;;
    esac
}

# the GPU test programs belong to test/test_gpt2.cu, test/test_vit.cu, test/test_swin.cu (the emu harness), not to llmc/core/cli
for prog in bin/*; do
    name=$(basename "$prog")
    case $name in test_gpt2cu | test_gpt2fp32cu | test_vitcu | test_vitfp32cu | test_swincu | test_swinfp32cu) continue ;; esac
    [ -x "$prog" ] || continue
    "$prog" -h > "$work/$name.help" 2> "$work/$name.help.err"
    rc=$?
    if [ $rc -ne 0 ] || ! grep -q "^usage: $name" "$work/$name.help" || [ -s "$work/$name.help.err" ]; then
        fail "$name -h: exit $rc, stdout $(head -c 80 "$work/$name.help"), stderr $(head -c 200 "$work/$name.help.err")"
        continue
    fi
    "$prog" --help > "$work/$name.help2" 2>&1 && cmp -s "$work/$name.help" "$work/$name.help2" && ok \
        || fail "$name --help differs from -h"
    expect_refused "$name unknown flag" "-no-such-flag" "$prog" -no-such-flag
    # each flag line: "  -x <type>  help" or "  --switch  help"
    flags=0
    while IFS=$'\t' read -r flag type; do
        flags=$((flags + 1))
        value=$(valid_value "$type")
        if [ -z "$type" ]; then
            FOLDNORM_CLI_DRY_RUN=1 "$prog" "$flag" > "$work/dry.txt" 2>&1
        else
            FOLDNORM_CLI_DRY_RUN=1 "$prog" "$flag" "$value" > "$work/dry.txt" 2>&1
        fi
        rc=$?
        if [ $rc -eq 0 ] && grep -q -- "^$flag=" "$work/dry.txt"; then
            ok
        else
            fail "$name $flag '$value' (<$type>): exit $rc: $(head -c 200 "$work/dry.txt")"
        fi
        bad=$(invalid_value "$type")
        if [ -n "$bad" ]; then
            expect_refused "$name $flag $bad (<$type>)" "$flag" "$prog" "$flag" "$bad"
        fi
        if [ -n "$type" ]; then
            expect_refused "$name $flag without its value" "$flag: missing value" "$prog" "$flag"
        fi
    done < <(sed -n 's/^  \(-[-a-zA-Z]*\)\( <\([^>]*\)>\)\{0,1\}.*/\1\t\3/p' "$work/$name.help" |
             grep -v -- '^-h,\?	')
    echo "$name: -h and $flags flag(s) checked"
done

# a flag named twice in a program's table is refused (test/test_cli.c; every
# program's -h above runs the same check on its own table); the GPU trainers'
# tables, where their emulated builds are there (make emu)
bin/test_cli > "$work/test_cli.out" 2>&1 && ok || fail "test_cli: $(grep FAIL "$work/test_cli.out" | head -2)"
for prog in build/emu/train_gpt2fp32cu build/emu/train_vitfp32cu build/emu/train_swinfp32cu; do
    [ -x "$prog" ] || continue
    "$prog" -h > /dev/null 2> "$work/gpu.help.err" && ok ||
        fail "$prog -h: $(head -c 200 "$work/gpu.help.err")"
done

# the values the issue found passing silently
expect_refused "train_gpt2 -sh 2" "-sh" bin/train_gpt2 -sh 2
expect_refused "train_gpt2 -gc -1" "-gc" bin/train_gpt2 -gc -1
expect_refused "train_gpt2 -q 2 (would raise the learning rate)" "-q" bin/train_gpt2 -q 2
expect_refused "train_gpt2 -x -1" "-x" bin/train_gpt2 -x -1
expect_refused "sample -tk -3" "-tk" bin/sample -e m.bin -tk -3
expect_refused "sample -tp -1" "-tp" bin/sample -e m.bin -tp -1
expect_refused "train_gpt2 -l 1e" "-l" bin/train_gpt2 -l 1e
expect_refused "train_gpt2 stray argument" "unexpected argument 'd12'" bin/train_gpt2 d12
expect_refused "test_gpt2 one file" "positional" bin/test_gpt2 a.bin
expect_refused "text_to_shard VAL_FRACTION 1" "VAL_FRACTION" bin/text_to_shard a b 1

# options before, between and after the positional arguments
for order in "--forward-only -rt 1e-3 A.bin B.bin" "A.bin --forward-only B.bin -rt 1e-3" \
             "A.bin B.bin -rt 1e-3 --forward-only"; do
    # shellcheck disable=SC2086
    FOLDNORM_CLI_DRY_RUN=1 bin/test_gpt2 $order > "$work/dry.txt" 2>&1
    if grep -qx -- "--forward-only=1" "$work/dry.txt" && grep -qx -- "-rt=0.001" "$work/dry.txt" &&
       grep -qx "positional 1=A.bin" "$work/dry.txt" && grep -qx "positional 2=B.bin" "$work/dry.txt"; then
        ok
    else
        fail "test_gpt2 $order: $(tr '\n' ' ' < "$work/dry.txt")"
    fi
done

# real runs: the GPT-2 trainer on byte shards with most flags, -o three folders deep
bin/text_to_shard README.md "$work/bytes" 0.2 > /dev/null || fail "text_to_shard"
out=$work/deep/er/gpt2
if bin/train_gpt2 -e d1c16h2v256t32 -N cbwc -i "$work/bytes_train_*.bin" -j "$work/bytes_val_*.bin" \
        -sh 1 -o "$out" -b 2 -t 16 -d 64 -l 1e-3 -u 1 -q 0.1 -c 0.01 -gc 1 -x 2 -v 1 -m 1 -a 0 \
        -sd 3 -sft 0 -s 2 -g 4 -tk 5 -tp 0.9 -vd "$work/no-vocab" -n 1 -nk 1 -y 0 -z 1 \
        > "$work/gpt2.out" 2>&1 && [ -f "$out/main.log" ] && [ -f "$out/model_00000002.bin" ] &&
        [ ! -f "$out/model_00000001.bin" ]; then
    ok
else
    fail "train_gpt2 with most flags and -o $out: $(tail -5 "$work/gpt2.out")"
fi
# ... and the image trainers, when Fashion-MNIST is installed
fmnist=/usr/share/datasets/fashion-mnist
if [ -f "$fmnist/train-images-idx3-ubyte.gz" ]; then
    out=$work/deep/er/vit
    bin/train_vit -e vit -N rms -i "$fmnist" -j "$fmnist" -o "$out" -C 8 -L 1 -H 2 -P 7 -R 2 \
        -b 16 -ep 1 -x 2 -nt 32 -ne 16 -l 1e-3 -q 0.5 -u 1 -c 0.01 -gc 1 -ls 0 -f 0 -pe 1 -sd 3 \
        > "$work/vit.out" 2>&1 && [ -f "$out/model_00000002.bin" ] && ok \
        || fail "train_vit (ViT) with most flags: $(tail -5 "$work/vit.out")"
    bin/train_vit -e swin -N cbwc -i "$fmnist" -E 8 -D 2 -A 2 -W 7 -K 1 -P 2 -R 2 -b 16 -x 1 \
        -nt 16 -ne 16 > "$work/swin.out" 2>&1 && grep -q "centring-ops=1 depths=2 heads=2" "$work/swin.out" \
        && ok || fail "train_vit (Swin) shape flags: $(tail -5 "$work/swin.out")"
    bin/train_vit -e "$work/deep/er/vit/model_00000002.bin" -i "$fmnist" -b 16 -x 1 -nt 16 -ne 16 \
        > "$work/vit2.out" 2>&1 && grep -q "mode rms" "$work/vit2.out" && ok \
        || fail "train_vit -e MODEL.bin: $(tail -5 "$work/vit2.out")"
else
    fail "the train_vit runs: no Fashion-MNIST in $fmnist (make deps)"
fi

echo "cli: $checks check(s) passed, $fails failure(s)"
[ $fails -eq 0 ]
