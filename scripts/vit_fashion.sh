#!/usr/bin/env bash
# Demo: a small ViT and a small Swin trained on Fashion-MNIST in each norm mode
# (ln, rms, cbwc), then a table of test accuracy and training images/s.
#   scripts/vit_fashion.sh [OUTDIR]     (default out/vit_fashion)
# Budget knobs (environment): VIT_EPOCHS (default 3), SWIN_EPOCHS (default 1),
# SWIN_TRAIN (train images for Swin, default 30000), THREADS (default 2),
# MODES (default "ln rms cbwc"), FAMILIES (default "vit swin").
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/vit_fashion}
mkdir -p "$out"
data=$(scripts/prepare_fashion_mnist.sh)
[ -x bin/train_vit ] || make -s train_vit
export OMP_NUM_THREADS=${THREADS:-2}
vit_epochs=${VIT_EPOCHS:-3}
swin_epochs=${SWIN_EPOCHS:-1}
swin_train=${SWIN_TRAIN:-30000}
modes=${MODES:-ln rms cbwc}
families=${FAMILIES:-vit swin}
for family in $families; do
    for mode in $modes; do
        run=$out/${family}_$mode
        rm -rf "$run" # a run folder holds one run: a rerun starts over
        if [ "$family" = vit ]; then
            # ViT: 28x28, patch 7 (16 patches + cls), C 64, 4 layers, 4 heads
            args=(-e vit -ep "$vit_epochs")
        else
            # Swin: patch 2 (14x14 tokens), embed 32, depths 2,2, heads 2,4, window 7
            # (2x2 windows with a shift of 3 in stage 1, one window in stage 2)
            args=(-e swin -ep "$swin_epochs" -nt "$swin_train" -u 20)
        fi
        echo "== $family $mode: bin/train_vit ${args[*]} -N $mode -i $data -o $run"
        start=$SECONDS
        bin/train_vit "${args[@]}" -N "$mode" -i "$data" -o "$run" -pe 100 | tee "$run.out"
        echo "wall_seconds $((SECONDS - start))" >> "$run.out"
    done
done
echo
printf "%-6s %-5s %14s %16s %12s\n" family mode test_accuracy train_images/s wall_s
for family in $families; do
    for mode in $modes; do
        f=$out/${family}_$mode.out
        acc=$(sed -n 's/.*test_accuracy \([0-9.]*\).*/\1/p' "$f" | tail -1)
        ips=$(sed -n 's/.*median_images_per_s \([0-9.]*\).*/\1/p' "$f" | tail -1)
        wall=$(sed -n 's/^wall_seconds //p' "$f")
        printf "%-6s %-5s %14s %16s %12s\n" "$family" "$mode" "$acc" "$ips" "$wall"
    done
done
