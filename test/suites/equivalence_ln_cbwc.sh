#!/usr/bin/env bash
# LN == CBWC+RMS (docs/math.md section 2): bin/test_equivalence trains ln,
# cbwc and rms from the same PyTorch-written weights for 60 AdamW steps; ln
# and cbwc must agree (logits and the step-0 gradients 1e-5 relative, the
# last step's gradients 1e-3, loss 1e-4 absolute at every step), rms must not.
# tier: check
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}
PY=${PYTHON:-/usr/bin/python3}
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
echo "equivalence_ln_cbwc: seed $seed"
[ -x bin/test_equivalence ] || make -s test_equivalence
$PY dev/reference/gpt2.py --mode ln --seed $((seed + 2)) --model "$work/eq.bin"
bin/test_equivalence "$work/eq.bin" $((seed + 3)) 60
# the comparisons fail on NaN: a NaN in one cbwc gradient element at the last
# step, or in cbwc's loss at a step after step 0, must fail the test
# (FOLDNORM_TEST_INJECT_NAN, test/test_helpers.h; 3 steps)
for what in cbwc_grad cbwc_loss; do
    if FOLDNORM_TEST_INJECT_NAN=$what bin/test_equivalence "$work/eq.bin" $((seed + 3)) 3 > "$work/nan_$what.out" 2>&1; then
        echo "FAIL a NaN in one $what passed test_equivalence:"; sed 's/^/     /' "$work/nan_$what.out"; exit 1
    fi
    grep -q 'one NaN put in' "$work/nan_$what.out" && grep -q '^FAILED' "$work/nan_$what.out" ||
        { echo "FAIL a NaN in one $what: no injection or no FAILED line"; cat "$work/nan_$what.out"; exit 1; }
    echo "ok   a NaN in one $what fails test_equivalence"
done
