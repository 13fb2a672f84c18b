#!/usr/bin/env bash
# GPU GPT-2 (train_gpt2.cu, test/test_gpt2.cu): builds nothing. Where the
# test binaries exist (make finds nvcc), their input checks run on any
# machine (bad or truncated files give a clear error and exit 1); where a
# CUDA device is present, test_gpt2fp32cu and test_gpt2cu check all three
# modes against fresh PyTorch reference states. Without a device (or without
# the binaries) that part prints SKIP with the reason and the suite exits 77.
set -uo pipefail
cd "$(dirname "$0")/../.."
. test/suite_outcome.sh
work=${1:-$(mktemp -d)}/cuda_gpt2
mkdir -p "$work"
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
echo "cuda_gpt2: seed $seed"
PY=${PYTHON:-/usr/bin/python3}
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
bins=()
for b in test_gpt2fp32cu test_gpt2cu; do [ -x "bin/$b" ] && bins+=("$b"); done
if [ ${#bins[@]} -eq 0 ]; then
    skip_part "no CUDA test binaries (nvcc not found at build time: make builds them where it is)"
    suite_exit 0
fi
s=$(( seed % 1000000 ))
$PY dev/reference/gpt2.py --mode ln --seed $s --model "$work/ln.bin" --state "$work/ln_state.bin" \
    --steps 3 > "$work/ref.log" 2>&1 || { cat "$work/ref.log"; echo "FAIL reference state"; exit 1; }

# 1. input checks (before any device is touched): each must fail with a message naming the file
expect_error() { # NAME PATTERN COMMAND...
    local name=$1 pattern=$2; shift 2
    local out rc
    out=$("$@" 2>&1); rc=$?
    if [ $rc -eq 1 ] && grep -q -- "$pattern" <<< "$out"; then ok "$name"; else
        bad "$name (exit $rc): $out"; fi
}
head -c 2000 "$work/ln_state.bin" > "$work/truncated_state.bin"
printf 'not a state file at all, just text padding it out to more than a kilobyte%01000d' 0 \
    > "$work/garbage.bin"
cp "$work/ln_state.bin" "$work/long_state.bin"; printf 'xxxx' >> "$work/long_state.bin"
for b in "${bins[@]}"; do
    expect_error "$b: truncated state" "truncated_state.bin" bin/$b "$work/ln.bin" "$work/truncated_state.bin"
    expect_error "$b: state with trailing bytes" "long_state.bin" bin/$b "$work/ln.bin" "$work/long_state.bin"
    expect_error "$b: state that is no state" "not a debug state" bin/$b "$work/ln.bin" "$work/garbage.bin"
    expect_error "$b: model that is no model" "garbage.bin" bin/$b "$work/garbage.bin" "$work/ln_state.bin"
    expect_error "$b: missing model" "missing.bin" bin/$b "$work/missing.bin" "$work/ln_state.bin"
    expect_error "$b: bad mode" "-N" bin/$b "$work/ln.bin" "$work/ln_state.bin" -N layer
done

# 2. the GPU checks, or SKIP with the reason (asked once, before more reference states)
probe=$(bin/${bins[0]} "$work/ln.bin" "$work/ln_state.bin" 2>&1)
if grep -q '^SKIP' <<< "$probe"; then
    skip_part "GPU checks of ${bins[*]}: $(grep '^SKIP' <<< "$probe" | head -1)"
    suite_exit $fails
fi
for b in "${bins[@]}"; do
    for mode in ln rms cbwc; do
        m=$(( (s + ${#mode}) % 1000000 ))
        $PY dev/reference/gpt2.py --mode $mode --seed $m --model "$work/$mode.bin" \
            --state "$work/${mode}_state.bin" --steps 3 > /dev/null 2>&1 || { bad "reference $mode"; continue; }
        extra=(--curve 5 --seed $m)
        [ $mode = ln ] && extra+=(--equivalence 5)
        if out=$(bin/$b "$work/$mode.bin" "$work/${mode}_state.bin" "${extra[@]}" 2>&1); then
            ok "$b $mode: logits, loss, gradients, steps, curve vs CPU"
        else
            bad "$b $mode"; echo "$out" | sed 's/^/     /' | tail -30
        fi
    done
done
suite_exit $fails
