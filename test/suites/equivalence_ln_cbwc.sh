#!/usr/bin/env bash
# LN == CBWC+RMS (docs/math.md section 2): bin/test_equivalence trains ln,
# cbwc and rms from the same PyTorch-written weights for 60 AdamW steps; ln
# and cbwc must agree (logits and all gradients 1e-5 relative, loss 1e-4
# absolute at every step), rms must not.
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
