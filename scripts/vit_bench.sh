#!/usr/bin/env bash
# Training throughput, train_vit vs PyTorch (Debian torch, the reference
# model code in dev/reference, same config, batch and threads), side by side:
# for each family and mode the two run back to back, in ROUNDS rounds; each
# prints the median images/s over its timed steps (after 2 warm-up steps).
#   scripts/vit_bench.sh            (env: THREADS=2 ROUNDS=2 STEPS=8 B=128 MODES="ln rms cbwc"
#                                    FAMILIES="vit swin" TRAIN_VIT=bin/train_vit TORCH_BLAS_THREADS=1)
# Debian's torch calls OpenBLAS's pthread build, whose own pool ignores
# torch.set_num_threads and starts one thread per core: at THREADS=1 torch
# would use both cores for its matmuls. TORCH_BLAS_THREADS (OPENBLAS_NUM_THREADS
# for the torch run only) is 1 by default, torch's faster setting at 1 and 2
# threads here (at 2 its OpenMP and OpenBLAS pools otherwise contend).
# TRAIN_VIT runs another build of train_vit (e.g. an older commit's) in its place.
set -euo pipefail
cd "$(dirname "$0")/.."
train_vit=${TRAIN_VIT:-bin/train_vit}
[ -n "${TRAIN_VIT:-}" ] || [ -x bin/train_vit ] || make -s train_vit
[ -x bin/cpu_info ] || make -s cpu_info
threads=${THREADS:-2}; rounds=${ROUNDS:-2}; steps=${STEPS:-8}; B=${B:-128}
modes=${MODES:-ln rms cbwc}; families=${FAMILIES:-vit swin}
torch_blas_threads=${TORCH_BLAS_THREADS:-1}
export OMP_NUM_THREADS=$threads
PY=${PYTHON:-/usr/bin/python3}
data=$(scripts/prepare_fashion_mnist.sh)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "vit_bench: threads $threads, B $B, $steps timed steps, $rounds rounds (medians over rounds)," \
     "$train_vit, torch with OPENBLAS_NUM_THREADS=$torch_blas_threads, load average $(cut -d' ' -f1-3 /proc/loadavg)"
bin/cpu_info | sed 's/^/vit_bench: /'   # the ratios differ by CPU class (AVX2 / AVX-512)
for round in $(seq 1 "$rounds"); do
    for family in $families; do
        for mode in $modes; do
            "$train_vit" -e $family -N $mode -i "$data" -b $B -x $((steps + 2)) -nt $((B * (steps + 2))) \
                -ne 128 -pe 1000000 | sed -n 's/.*median_images_per_s \([0-9.]*\).*/\1/p' \
                >> "$out/c_${family}_$mode"
            OPENBLAS_NUM_THREADS=$torch_blas_threads $PY dev/reference/vision_throughput.py \
                --family $family --mode $mode --B $B --steps $steps --threads $threads |
                sed -n 's/.* images_per_s \([0-9.]*\).*/\1/p' >> "$out/t_${family}_$mode"
        done
    done
done
median() { sort -g "$1" | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
printf "%-6s %-5s %14s %14s %8s\n" family mode "C images/s" "torch images/s" ratio
for family in $families; do
    for mode in $modes; do
        c=$(median "$out/c_${family}_$mode"); t=$(median "$out/t_${family}_$mode")
        printf "%-6s %-5s %14s %14s %7.2fx\n" $family $mode "$c" "$t" "$(awk -v c="$c" -v t="$t" 'BEGIN {print c / t}')"
    done
done
