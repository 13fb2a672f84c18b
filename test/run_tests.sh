#!/usr/bin/env bash
# foldnorm's test suite (make test). Fresh random seeds every run; set
# FOLDNORM_TEST_SEED to replay one. Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
PY=${PYTHON:-/usr/bin/python3}
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
export FOLDNORM_TEST_SEED=$seed  # suites derive their seeds from it
work=$(mktemp -d /tmp/foldnorm_test.XXXXXX)
trap 'rm -rf "$work"' EXIT
passed=0; failed=0; failures=()
echo "foldnorm tests: seed $seed (FOLDNORM_TEST_SEED=$seed replays), work dir $work"

# run_test NAME COMMAND...: runs the command, logs to $work/NAME.log
run_test() {
    local name=$1; shift
    local t0=$SECONDS
    if "$@" > "$work/$name.log" 2>&1; then
        passed=$((passed + 1)); echo "PASS $name ($((SECONDS - t0)) s)"
    else
        failed=$((failed + 1)); failures+=("$name"); echo "FAIL $name ($((SECONDS - t0)) s)"
        sed 's/^/    /' "$work/$name.log" | tail -40
    fi
}

# check_reference MODE TAG SEED [reference flags...]: the reference writes a
# fresh model + debug state, test_gpt2 checks logits, loss, all gradients, steps
check_reference() {
    local mode=$1 tag=$2 s=$3; shift 3
    $PY dev/reference/gpt2.py --mode "$mode" --seed "$s" --model "$work/$tag.bin" \
        --state "$work/${tag}_state.bin" "$@" && bin/test_gpt2 "$work/$tag.bin" "$work/${tag}_state.bin"
}
check_equivalence() {
    $PY dev/reference/gpt2.py --mode ln --seed "$1" --model "$work/eq.bin" &&
        bin/test_equivalence "$work/eq.bin" "$2" 60
}

# 1. logits, loss, every gradient and AdamW steps vs the PyTorch reference
for mode in ln rms cbwc; do
    run_test "reference_${mode}_small" check_reference $mode ${mode}_small $seed --steps 10
    # another shape: 3 layers, 6 heads, T < maxT, V not a multiple of 128, gpt2 init
    run_test "reference_${mode}_odd" check_reference $mode ${mode}_odd $((seed + 1)) \
        --L 3 --C 96 --NH 6 --V 301 --Vp 384 --maxT 40 --B 2 --T 24 --init gpt2 --steps 5 --lr 3e-3
done

# 2. LN == CBWC+RMS from the same weights over 60 AdamW steps; rms must differ
run_test equivalence_ln_cbwc check_equivalence $((seed + 2)) $((seed + 3))

# 3. bad input: each gives a clear error naming the file or flag, exit 1, no crash
run_test bad_input test/test_bad_input.sh "$work"

# 4. training loop: log lines, checkpoints, resume reproduces the loss lines
run_test train_resume test/test_train_resume.sh "$work"

# 5. feature suites: every test/suites/*.sh, called with the work dir, exit 0 = pass
for suite in test/suites/*.sh; do
    [ -e "$suite" ] || continue
    run_test "$(basename "$suite" .sh)" "$suite" "$work"
done

echo
[ ${#failures[@]} -eq 0 ] || echo "failed: ${failures[*]} (seed $seed)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
