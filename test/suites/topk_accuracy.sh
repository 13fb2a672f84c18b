#!/usr/bin/env bash
# Top-1 and top-5 test accuracy (llmc/kernels/classifier_loss.c,
# classifier_topk_count, which train_vit and train_vitcu report): the hit
# counts equal torch.topk's on the same random logits (K 3, 10, 100;
# without ties, where torch's order is unspecified), exactly; negative
# control: the top-4 and top-6 counts differ from torch's top-5 (test_vit
# --topk). Then train_vit's test pass: top-5 >= top-1 on its final line and a
# te5 line in main.log when Fashion-MNIST is at hand (SKIP otherwise), and
# the emulated train_vitfp32cu's te5 within 2 of 64 images of the CPU's.
# In the fast tier (FOLDNORM_TEST_TIER=check) the torch comparison only.
# tier: check
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}
PY=${PYTHON:-/usr/bin/python3}
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
echo "topk_accuracy: seed $seed"
[ -x bin/test_vit ] || make -s test_vit
$PY - "$work/topk.bin" "$seed" <<'PYEOF'
import sys
import numpy as np
import torch
path, seed = sys.argv[1], int(sys.argv[2])
g = torch.Generator().manual_seed(seed)
with open(path, "wb") as f:
    for N, K in ((1000, 10), (500, 100), (64, 3)):
        labels = torch.randint(0, K, (N,), generator=g)
        # a classifier-like margin for the label, so top-1 and top-5 are far from chance
        logits = torch.randn((N, K), generator=g) + 1.5 * torch.nn.functional.one_hot(labels, K)
        ties = (logits.sort(1).values.diff(1) == 0).any(1)  # torch orders ties unspecified
        for i in ties.nonzero().flatten().tolist():
            logits[i] = torch.randperm(K, generator=g).float()
        top = logits.topk(min(5, K), dim=1).indices
        hits = [int((top[:, :k] == labels[:, None]).any(1).sum()) for k in (1, min(5, K))]
        f.write(np.array([N, K], dtype="<i4").tobytes())
        f.write(logits.numpy().astype("<f4").tobytes())
        f.write(labels.numpy().astype("<i4").tobytes())
        f.write(np.array(hits, dtype="<i4").tobytes())
PYEOF
bin/test_vit --topk "$work/topk.bin"
if [ "${FOLDNORM_TEST_TIER:-full}" = check ]; then echo "topk_accuracy: the fast tier's checks passed"; exit 0; fi
fmnist=/usr/share/datasets/fashion-mnist
if [ ! -f "$fmnist/t10k-labels-idx1-ubyte.gz" ]; then
    echo "SKIP: train_vit's test pass: no Fashion-MNIST in $fmnist (Debian's fashion-mnist)"
    exit 77
fi
[ -x bin/train_vit ] || make -s train_vit
echo "== train_vit: a tiny ViT, 6 steps, top-5 in the epoch line, main.log and the final line"
rm -rf "$work/run"
bin/train_vit -e vit -C 16 -L 1 -H 2 -b 32 -x 6 -nt 192 -ne 128 -u 2 -pe 3 -sd $((seed % 1000 + 1)) \
    -o "$work/run" > "$work/run.out" 2>&1 || { cat "$work/run.out"; exit 1; }
top1=$(sed -nE 's/^final: .* test_accuracy ([0-9.]+) .*/\1/p' "$work/run.out")
top5=$(sed -nE 's/^final: .* test_top5 ([0-9.]+).*/\1/p' "$work/run.out")
logged=$(sed -nE 's/^s:6 te5:([0-9.]+)$/\1/p' "$work/run/main.log")
echo "  final top-1 $top1, top-5 $top5; main.log te5 $logged"
$PY -c "import sys; t1, t5, lg = map(float, sys.argv[1:]); sys.exit(not (t1 <= t5 <= 1 and abs(lg - t5) <= 5e-5))" \
    "$top1" "$top5" "$logged" || { echo "FAIL: top-5 missing, below top-1 or not the logged value"; exit 1; }
bin/train_vit -e "$work/run/model_00000006.bin" -ev 1 -ne 128 > "$work/ev.out" 2>&1 || { cat "$work/ev.out"; exit 1; }
grep -q "test_top5 $top5" "$work/ev.out" || { cat "$work/ev.out"; echo "FAIL: -ev 1's top-5 is not the run's"; exit 1; }
echo "  -ev 1 on the checkpoint: the same top-5"
# the GPU trainer's test pass, emulated (a logic check, not a device run)
emu=build/emu/train_vitfp32cu
if [ ! -x $emu ]; then
    echo "SKIP: train_vitfp32cu's test pass: $emu not built (make emu)"
    exit 77
fi
echo "== $emu (emulated): 2 steps from the same seed as train_vit, top-5 logged and equal to the CPU's"
for prog in bin/train_vit $emu; do
    rm -rf "$work/r2"
    $prog -e vit -C 16 -L 1 -H 2 -b 32 -x 2 -nt 64 -ne 64 -u 1 -pe 1 -sd $((seed % 1000 + 1)) \
        -o "$work/r2" > "$work/r2.out" 2>&1 || { cat "$work/r2.out"; exit 1; }
    sed -nE 's/^s:2 te5:([0-9.]+)$/\1/p' "$work/r2/main.log" > "$work/te5_${prog##*/}"
done
# fp32 logits in other summation orders may move a borderline image: 2 of 64 allowed
$PY -c "import sys; c, g = (float(open(p).read()) for p in sys.argv[1:]); print(f'  top-5 CPU {c}, emulated GPU {g}'); sys.exit(not abs(c - g) <= 2 / 64 + 1e-6)" \
    "$work/te5_train_vit" "$work/te5_train_vitfp32cu" || { echo "FAIL: the GPU trainer's top-5"; exit 1; }
echo "topk_accuracy: all checks passed"
