#!/usr/bin/env bash
# Stochastic depth (drop-path, llmc/kernels/drop_path.c) in the CPU ViT and
# Swin: drop_path_draw's drop fraction per block follows torch.linspace(0,
# rate, blocks) within 6 binomial sigmas, kept branches scaled 1 / (1 - p);
# with the drop-path scales (B, blocks, 2) the PyTorch references drew
# (dev/reference/drop_path.py: per sample and branch, Swin's linear rule over
# depth), logits, loss, every gradient and the AdamW-step losses within the
# reference check's 1e-5 (test_vit -dp), at B 16 so that the per-thread
# replicas take slices of the scales; negative control: the same state checked
# without the masks fails. Then ln == cbwc with fresh masks every step (ViT
# 40 steps, Swin config B 30 steps with and without the centring ops): the
# equivalence check's tolerances (logits 1e-5, gradients 1e-4, losses 1e-4;
# measured ~1e-7..4e-7), the rms control differing. train_vit -dp: a resume
# gives the uninterrupted run's model and state bit for bit; control: -dp 0
# trains another model (SKIP without Fashion-MNIST); the emulated
# train_vitfp32cu -dp (ViT and Swin) follows train_vit -dp's curve within
# 1e-5 relative, and -dp 0's differs by > 1e-4. GPT-2 (train_gpt2 -dp, the
# shared block's drop-path): with the scales dev/reference/gpt2.py drew,
# logits, loss, every gradient and 4 AdamW-step losses within test_gpt2's
# tolerances (1e-5 relative, 1e-4 on the losses) in ln and cbwc, and the
# same state without the masks fails; ln == cbwc over 20 steps with fresh
# masks (test_equivalence -dp, its tolerances, rms the control); train_gpt2
# -dp evaluates without the masks (step 0 val loss equals -dp 0's), a resume
# at step 2 gives step 4's model and state bit for bit, -dp 0 trains another
# curve; the emulated train_gpt2fp32cu -dp follows train_gpt2 -dp's curve
# within 1e-5 relative and train_gpt2 -dp 0's differs by > 1e-4. In the fast tier
# (FOLDNORM_TEST_TIER=check): the ViT ln reference check and its control only.
# tier: check
set -euo pipefail
quick=0; [ "${FOLDNORM_TEST_TIER:-full}" = check ] && quick=1
cd "$(dirname "$0")/../.."
. test/trainer_curves.sh # curve_diff, same_step_files
work=${1:-$(mktemp -d)}
PY=${PYTHON:-/usr/bin/python3}
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
echo "drop_path: seed $seed"
[ -x bin/test_vit ] || make -s test_vit
cfg_a="--image-size 16 --patch-size 2 --image-channels 2 --embed-dim 12 --depths 2,2 --heads 2,4 --window 4"
cfg_b="--image-size 24 --patch-size 2 --image-channels 3 --embed-dim 8 --depths 2,2,2 --heads 2,2,4 --window 3 --num-classes 4"
reference() { # name reference.py args...
    local name=$1 ref=$2; shift 2
    echo "== $name: against the reference's gradients with the same masks"
    # shellcheck disable=SC2086
    $PY "dev/reference/$ref" "$@" --seed $((seed + ${#name})) --steps 3 --B 16 --model "$work/$name.bin" \
        --state "$work/${name}_s.bin" --drop-path-scales "$work/${name}_dp.bin"
    bin/test_vit -dp "$work/${name}_dp.bin" "$work/$name.bin" "$work/${name}_s.bin" | grep -v "  ok$"
    if bin/test_vit "$work/$name.bin" "$work/${name}_s.bin" > "$work/${name}_control.txt"; then
        echo "FAIL: $name without the masks passes too (the masks did nothing)"; exit 1
    fi
    echo "  control: without the masks, $(grep -c FAIL "$work/${name}_control.txt") checks fail"
}
echo "== the linear rule: drop_path_draw's drop fraction per block vs torch.linspace(0, 0.2, 12)"
bin/test_vit --drop-path-rule 0.2 12 $((seed + 1)) > "$work/rule.txt"
$PY - "$work/rule.txt" <<'PYEOF'
import math
import sys
import torch
rates = torch.linspace(0, 0.2, 12, dtype=torch.float64).tolist()
worst = 0.0
for line, p in zip(open(sys.argv[1]).read().splitlines(), rates):
    w = line.split()
    frac, n, scale = float(w[3]), int(w[5]), float(w[7])
    # 6 binomial standard deviations (rate * i / n instead, the last block is off by 8 at n = 40000)
    sigma = math.sqrt(max(p * (1 - p), 1e-12) / n)
    z = abs(frac - p) / sigma if p > 0 else (0.0 if frac == 0 else math.inf)
    worst = max(worst, z)
    if not (z <= 6 and abs(scale - 1 / (1 - p)) <= 1e-6):
        sys.exit(f"FAIL {line}: expected rate {p:.6f}, scale {1 / (1 - p):.7f}")
print(f"  ok: 12 blocks, worst deviation {worst:.2f} sigma (6 allowed), scales 1 / (1 - p)")
PYEOF
reference vit_ln vit.py --mode ln --num-layers 3 --drop-path 0.5
if [ $quick = 1 ]; then echo "drop_path: all checks of the fast tier passed"; exit 0; fi
reference vit_cbwc vit.py --mode cbwc --num-layers 3 --drop-path 0.5
echo "== ViT: ln == cbwc with drop-path 0.3, 40 steps"
$PY dev/reference/vit.py --mode ln --seed $((seed + 3)) --num-layers 3 --model "$work/vit_eq.bin"
bin/test_vit --drop-path-rate 0.3 --equivalence "$work/vit_eq.bin" $((seed + 4)) 40
# shellcheck disable=SC2086
reference swin_a_cbwc swin.py --mode cbwc $cfg_a --drop-path 0.4
# shellcheck disable=SC2086
reference swin_b_ln swin.py --mode ln $cfg_b --drop-path 0.4
for centre in 0 1; do
    echo "== Swin config B, centring ops $centre: ln == cbwc with drop-path 0.3, 30 steps"
    # shellcheck disable=SC2086
    $PY dev/reference/swin.py --mode ln --seed $((seed + 5 + centre)) $cfg_b --centre-ops $centre \
        --model "$work/sw_eq$centre.bin"
    bin/test_vit --drop-path-rate 0.3 --equivalence "$work/sw_eq$centre.bin" $((seed + 7 + centre)) 30
done
gpt2_checks() {
    for b in test_gpt2 test_equivalence train_gpt2; do [ -x bin/$b ] || make -s $b; done
    local mode rate=0.$(( seed % 3 + 3 )) # 0.3 .. 0.5 at the last block
    for mode in ln cbwc; do
        echo "== GPT-2 $mode, drop-path $rate: against the reference's gradients with the same masks"
        $PY dev/reference/gpt2.py --mode $mode --seed $((seed + 11)) --L 3 --steps 4 --drop-path $rate \
            --model "$work/g_$mode.bin" --state "$work/g_${mode}_s.bin" \
            --drop-path-scales "$work/g_${mode}_dp.bin" > /dev/null
        bin/test_gpt2 -dp "$work/g_${mode}_dp.bin" "$work/g_$mode.bin" "$work/g_${mode}_s.bin" | grep -v "  ok$"
        if bin/test_gpt2 "$work/g_$mode.bin" "$work/g_${mode}_s.bin" > "$work/g_${mode}_control.txt"; then
            echo "FAIL: GPT-2 $mode without the masks passes too (the masks did nothing)"; exit 1
        fi
        echo "  control: without the masks, $(grep -c FAIL "$work/g_${mode}_control.txt") checks fail"
    done
    # 20 steps: at 10 the rms control (> 1e-3) measured 1.5e-3 .. 1.4e-2 over 31 seeds, too close
    echo "== GPT-2: ln == cbwc with drop-path $rate, 20 steps at lr 3e-3"
    $PY dev/reference/gpt2.py --mode ln --seed $((seed + 12)) --model "$work/g_eq.bin" > /dev/null
    bin/test_equivalence -dp "$rate" "$work/g_eq.bin" $((seed + 13)) 20 4 32 0 3e-3 | grep -E "step|loss|drop|OK"
    echo "== train_gpt2 -dp $rate: eval without the masks, a resume at step 2 bit-exact, -dp 0 differs"
    scripts/prepare_kjv_bytes.sh > /dev/null
    local g=(-e d2c64h4v256t64 -i "data/kjv/kjv_bytes_train_*.bin" -j "data/kjv/kjv_bytes_val_*.bin"
             -b 4 -t 32 -v 4 -m 1 -l 3e-3 -sd $((seed % 1000 + 1)))
    rm -rf "$work/g_full" "$work/g_resumed" "$work/g_nodp" "$work/g_emu"
    bin/train_gpt2 "${g[@]}" -x 4 -n 2 -dp "$rate" -o "$work/g_full" > "$work/g_full.out"
    bin/train_gpt2 "${g[@]}" -x 4 -n 2 -dp 0 -o "$work/g_nodp" > "$work/g_nodp.out"
    mkdir "$work/g_resumed"
    cp "$work/g_full/model_00000002.bin" "$work/g_full/state_00000002.bin" "$work/g_resumed/"
    bin/train_gpt2 "${g[@]}" -x 4 -n 2 -dp "$rate" -y 1 -o "$work/g_resumed" > "$work/g_resumed.out"
    same_step_files "$work/g_full" "$work/g_resumed" 4 || exit 1
    echo "  ok: the same model and state at step 4"
    local v0 v1
    v0=$(grep -E '^s:0 tel:' "$work/g_nodp/main.log"); v1=$(grep -E '^s:0 tel:' "$work/g_full/main.log")
    if [ -z "$v0" ] || [ "$v0" != "$v1" ]; then echo "FAIL: the val loss used drop-path ($v1 vs $v0)"; exit 1; fi
    echo "  ok: step 0 val loss without the masks: $v1"
    emu=build/emu/train_gpt2fp32cu
    if [ ! -x $emu ]; then
        echo "  (no $emu: the emulated GPU check is left to a build with make emu)"
        return
    fi
    echo "== $emu -dp $rate (emulated): train_gpt2 -dp's curve (1e-5 relative); train_gpt2 -dp 0 differs"
    OMP_NUM_THREADS=1 EMU_RACECHECK=0 $emu "${g[@]}" -x 4 -dp "$rate" -o "$work/g_emu" > "$work/g_emu.out" 2>&1 ||
        { tail "$work/g_emu.out"; exit 1; }
    local same other
    same=$(curve_diff "$work/g_full" "$work/g_emu"); other=$(curve_diff "$work/g_nodp" "$work/g_emu")
    echo "  CPU vs emulated GPU with -dp $rate: $same; CPU -dp 0 vs emulated GPU: $other"
    $PY -c "import sys; s, o = map(float, sys.argv[1:]); sys.exit(not (s <= 1e-5 and o > 1e-4))" "$same" "$other" ||
        { echo "FAIL: the GPU GPT-2's drop-path"; exit 1; }
}
gpt2_checks
fmnist=/usr/share/datasets/fashion-mnist
if [ ! -f "$fmnist/train-images-idx3-ubyte.gz" ]; then
    echo "SKIP: train_vit -dp: no Fashion-MNIST in $fmnist (Debian's fashion-mnist)"
    exit 77
fi
[ -x bin/train_vit ] || make -s train_vit
echo "== train_vit -dp 0.3 (Swin, cbwc): a resume from step 4 gives step 8's model and state bit for bit"
run=(bin/train_vit -e swin -E 8 -D 2,2 -A 1,2 -N cbwc -b 32 -x 8 -nt 256 -ne 64 -u 2 -pe 4 -n 4 -sd $((seed % 1000 + 1)))
rm -rf "$work/full" "$work/resumed" "$work/nodp"
"${run[@]}" -dp 0.3 -o "$work/full" > "$work/full.out"
cp -r "$work/full" "$work/resumed"
rm "$work/resumed/model_00000008.bin" "$work/resumed/state_00000008.bin"
"${run[@]}" -dp 0.3 -o "$work/resumed" -y 1 > "$work/resumed.out"
same_step_files "$work/full" "$work/resumed" 8 || exit 1
echo "  ok: the same model and state (augment RNG, moments) at step 8"
"${run[@]}" -dp 0 -o "$work/nodp" > "$work/nodp.out"
if cmp -s "$work/full/model_00000008.bin" "$work/nodp/model_00000008.bin"; then
    echo "FAIL: -dp 0.3 trained the model -dp 0 trains (the masks did nothing)"; exit 1
fi
echo "  control: -dp 0 gives another model"
# the GPU ViT and Swin (llmc/cuda/drop_path.cuh; ViT through
# transformer_block.cuh's branch mask), emulated: a logic check, not a device run
emu=build/emu/train_vitfp32cu
if [ ! -x $emu ]; then
    echo "SKIP: train_vitfp32cu -dp: $emu not built (make emu)"
    exit 77
fi
echo "== $emu -dp 0.3 (emulated, ViT cbwc): the CPU trainer's curve (1e-5 relative, as cuda_vit_emu); -dp 0 differs"
gpu=(-e vit -C 16 -L 3 -H 2 -b 16 -x 6 -nt 96 -ne 32 -u 1 -pe 1 -N cbwc -sd $((seed % 1000 + 1)))
rm -rf "$work/g_cpu" "$work/g_gpu" "$work/g_gpu0"
bin/train_vit "${gpu[@]}" -dp 0.3 -o "$work/g_cpu" > /dev/null
$emu "${gpu[@]}" -dp 0.3 -o "$work/g_gpu" > "$work/g_gpu.out" 2>&1 || { tail "$work/g_gpu.out"; exit 1; }
$emu "${gpu[@]}" -dp 0 -o "$work/g_gpu0" > "$work/g_gpu0.out" 2>&1 || { tail "$work/g_gpu0.out"; exit 1; }
same=$(curve_diff "$work/g_cpu" "$work/g_gpu"); other=$(curve_diff "$work/g_gpu0" "$work/g_gpu")
echo "  CPU vs emulated GPU with -dp 0.3: $same; emulated GPU -dp 0 vs 0.3: $other"
$PY -c "import sys; s, o = map(float, sys.argv[1:]); sys.exit(not (s <= 1e-5 and o > 1e-4))" "$same" "$other" ||
    { echo "FAIL: the GPU ViT's drop-path"; exit 1; }
echo "== $emu -dp 0.4 (emulated, Swin cbwc, 3 steps): the CPU trainer's curve; train_vit -dp 0 differs"
sw=(-e swin -E 8 -D 2,2 -A 1,2 -b 8 -x 3 -nt 24 -ne 8 -u 1 -pe 1 -N cbwc -sd $((seed % 1000 + 1)))
rm -rf "$work/s_cpu" "$work/s_gpu" "$work/s_cpu0"
bin/train_vit "${sw[@]}" -dp 0.4 -o "$work/s_cpu" > /dev/null
bin/train_vit "${sw[@]}" -dp 0 -o "$work/s_cpu0" > /dev/null
$emu "${sw[@]}" -dp 0.4 -o "$work/s_gpu" > "$work/s_gpu.out" 2>&1 || { tail "$work/s_gpu.out"; exit 1; }
same=$(curve_diff "$work/s_cpu" "$work/s_gpu"); other=$(curve_diff "$work/s_cpu0" "$work/s_gpu")
echo "  CPU vs emulated GPU with -dp 0.4: $same; CPU -dp 0 vs emulated GPU -dp 0.4: $other"
$PY -c "import sys; s, o = map(float, sys.argv[1:]); sys.exit(not (s <= 1e-5 and o > 1e-4))" "$same" "$other" ||
    { echo "FAIL: the GPU Swin's drop-path"; exit 1; }
echo "drop_path: all checks passed"
