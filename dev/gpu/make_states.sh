#!/usr/bin/env bash
# Reference states for dev/gpu/check.sh, made here (PyTorch on the CPU) with
# fixed seeds and carried to the GPU machine, which may lack torch. The same
# files replay any device failure in the emulator:
#   build/emu/test_gpt2fp32cu dev/gpu/states/ln_small.bin dev/gpu/states/ln_small_state.bin --curve 20 --seed 101
#   build/emu/test_vitfp32cu dev/gpu/states/vit_ln_small.bin dev/gpu/states/vit_ln_small_state.bin --curve 20 --seed 107
#   build/emu/test_swinfp32cu dev/gpu/states/swin_ln_a.bin dev/gpu/states/swin_ln_a_state.bin
# usage: dev/gpu/make_states.sh [DIR]   (default dev/gpu/states, ignored by git)
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-dev/gpu/states}
mkdir -p "$dir"
rm -f "$dir/seeds.txt.tmp"
PY=${PYTHON:-/usr/bin/python3}
# small: 2 layers C=64; odd: 3 layers, 6 heads, V not a multiple of 128, T < maxT
small="--steps 5"
odd="--L 3 --C 96 --NH 6 --V 301 --Vp 384 --maxT 40 --B 2 --T 24 --init gpt2 --steps 5 --lr 3e-3"
seed=100
for mode in ln rms cbwc; do
    for shape in small odd; do
        seed=$((seed + 1))
        $PY dev/reference/gpt2.py --mode $mode --seed $seed --model "$dir/${mode}_$shape.bin" \
            --state "$dir/${mode}_${shape}_state.bin" ${!shape} > /dev/null
        echo "$mode $shape $seed" >> "$dir/seeds.txt.tmp"
    done
done
# ViT (dev/reference/vit.py) for test_vitcu: small 8x8x2 patch 2 C=24; odd 12x12 RGB patch 3 (PD 27) C=32
vit_small="--steps 5"
vit_odd="--steps 5 --image-size 12 --image-channels 3 --patch-size 3 --channels 32 --num-heads 2
         --num-layers 3 --mlp-ratio 2 --num-classes 5 --B 5 --smoothing 0 --lr 3e-3"
rm -f "$dir/vit_seeds.txt.tmp"
for mode in ln rms cbwc; do
    for shape in small odd; do
        seed=$((seed + 1))
        var=vit_$shape
        # shellcheck disable=SC2086
        $PY dev/reference/vit.py --mode $mode --seed $seed --model "$dir/vit_${mode}_$shape.bin" \
            --state "$dir/vit_${mode}_${shape}_state.bin" ${!var} > /dev/null
        echo "$mode $shape $seed" >> "$dir/vit_seeds.txt.tmp"
    done
done
# Swin (dev/reference/swin.py) for test_swincu: test/suites/cuda_vit_emu.sh's two configs
# (a: 16x16x2, 2 stages, window 4 with shift; b: 24x24 RGB, 3 stages, window 3, centring ops)
swin_a="--image-size 16 --patch-size 2 --image-channels 2 --embed-dim 16 --depths 2,2 --heads 2,4 --window 4 --B 2 --steps 4"
swin_b="--image-size 24 --patch-size 2 --image-channels 3 --embed-dim 8 --depths 2,2,2 --heads 2,2,4 --window 3
        --mlp-ratio 4 --B 3 --num-classes 4 --steps 3 --lr 3e-3 --centre-ops 1"
rm -f "$dir/swin_seeds.txt.tmp"
for tag in ln_a rms_a cbwc_a ln_b cbwc_b; do
    seed=$((seed + 1))
    var=swin_${tag#*_}
    # shellcheck disable=SC2086
    $PY dev/reference/swin.py --mode "${tag%_*}" --seed $seed --model "$dir/swin_$tag.bin" \
        --state "$dir/swin_${tag}_state.bin" ${!var} > /dev/null
    echo "$tag $seed" >> "$dir/swin_seeds.txt.tmp"
done
mv "$dir/swin_seeds.txt.tmp" "$dir/swin_seeds.txt"
mv "$dir/vit_seeds.txt.tmp" "$dir/vit_seeds.txt"
mv "$dir/seeds.txt.tmp" "$dir/seeds.txt"
echo "wrote $(ls "$dir" | wc -l) files to $dir ($(du -sh "$dir" | cut -f1))"
