#!/usr/bin/env bash
# AdamW's parameter groups (timm's rule): one CPU AdamW step of ViT and Swin
# equals torch.optim.AdamW's with weight decay on the weight matrices only (no
# decay on norm gains and biases, any bias, pos, cls, Swin's relative-position
# tables), parameters within 1e-6 (test/test_vit.c, check_one_step: the
# tolerance and why); negative control: the step with decay on every tensor
# differs by > 1e-5 on every tensor the rule spares (wd 0.5 makes it ~1e-4+).
# tier: check
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}
PY=${PYTHON:-/usr/bin/python3}
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
echo "param_groups: seed $seed"
[ -x bin/test_vit ] || make -s test_vit
step="--lr 1e-2 --wd 0.5 --eps 1e-3"
swin_a="--image-size 16 --patch-size 2 --image-channels 2 --embed-dim 12 --depths 2,2 --heads 2,4 --window 4 --B 2"
run() { # name reference.py args...
    local name=$1 ref=$2; shift 2
    echo "== $name"
    # shellcheck disable=SC2086
    $PY "dev/reference/$ref" "$@" $step --seed $((seed + ${#name})) --model "$work/$name.bin" \
        --state "$work/${name}_s.bin" --after-step "$work/${name}_a.bin" \
        --after-step-all-decayed "$work/${name}_c.bin"
    bin/test_vit --one-step "$work/$name.bin" "$work/${name}_s.bin" "$work/${name}_a.bin" \
        "$work/${name}_c.bin"
}
run vit_ln vit.py --mode ln
run vit_cbwc vit.py --mode cbwc
# shellcheck disable=SC2086
run swin_cbwc swin.py --mode cbwc $swin_a
echo "param_groups: all checks passed"
