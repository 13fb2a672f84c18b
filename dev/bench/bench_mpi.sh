#!/usr/bin/env bash
# Data-parallel efficiency on this machine: 1 rank x 2 threads vs 2 ranks x 1
# thread (mpirun, Debian Open MPI) with the all-reduce (-z 0) and with the
# ZeRO-1 sharded update (-z 1), same model, same global batch, interleaved
# rounds; prints the median throughput of the timed steps of each run and the
# ratios, for GPT-2 (train_gpt2, tok/s) and ViT and Swin on Fashion-MNIST
# (train_vit, images/s; 1 rank x 2 threads there runs the batch on per-thread
# model copies, classifier.h). Not a test: it asserts nothing.
#   dev/bench/bench_mpi.sh   (env: FAMILIES="gpt2 vit swin" ROUNDS=2 MODE=ln
#     GPT-2: MODEL=d6 GLOBAL_B=32 T=64 STEPS=6
#     ViT / Swin: VIT_B=128 VIT_STEPS=12 SWIN_B=128 SWIN_STEPS=6, the -e vit / -e swin defaults)
set -euo pipefail
cd "$(dirname "$0")/../.."
families=${FAMILIES:-gpt2 vit swin}; rounds=${ROUNDS:-2}; mode=${MODE:-ln}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "mode $mode, $rounds rounds, commit $(git rev-parse --short HEAD)"
med() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
# median tok/s of train_gpt2's step lines after the first two
tok_s() { grep -oE '[0-9]+ tok/s' "$1" | awk 'NR > 2 {print $1}' | med; }
# train_vit's own median images/s of the steps after the first two
images_s() { sed -n 's/.*median_images_per_s \([0-9.]*\).*/\1/p' "$1"; }

# bench NAME UNIT RATE_FN GLOBAL_B PROGRAM FLAGS...: the three runs, ROUNDS times, and the table
bench() {
    local name=$1 unit=$2 rate=$3 gb=$4 prog=$5
    shift 5
    rm -f "$out/one" "$out/two_z0" "$out/two_z1"
    for _ in $(seq 1 "$rounds"); do
        OMP_NUM_THREADS=2 "$prog" "$@" -b "$gb" > "$out/one.log"
        "$rate" "$out/one.log" >> "$out/one"
        for z in 0 1; do
            OMP_NUM_THREADS=1 mpirun --oversubscribe -np 2 "$prog" "$@" -b $((gb / 2)) -z $z \
                > "$out/two_z$z.log"
            "$rate" "$out/two_z$z.log" >> "$out/two_z$z"
        done
    done
    local one z0 z1
    one=$(med < "$out/one"); z0=$(med < "$out/two_z0"); z1=$(med < "$out/two_z1")
    echo
    echo "$name, global batch $gb: runs $(tr '\n' ' ' < "$out/one")/ $(tr '\n' ' ' < "$out/two_z0")/ $(tr '\n' ' ' < "$out/two_z1")"
    printf "%-34s %10s %8s\n" run "$unit" ratio
    printf "%-34s %10s %8s\n" "1 rank x 2 threads" "$one" 1.00
    printf "%-34s %10s %8.2f\n" "2 ranks x 1 thread, all-reduce" "$z0" "$(awk -v a="$z0" -v b="$one" 'BEGIN {print a / b}')"
    printf "%-34s %10s %8.2f\n" "2 ranks x 1 thread, ZeRO-1" "$z1" "$(awk -v a="$z1" -v b="$one" 'BEGIN {print a / b}')"
}

fmnist=/usr/share/datasets/fashion-mnist
for family in $families; do
    case $family in
    gpt2)
        [ -e data/kjv/kjv_train_000000.bin ] || scripts/prepare_kjv.sh > /dev/null
        model=${MODEL:-d6}; gb=${GLOBAL_B:-32}; T=${T:-64}; steps=${STEPS:-6}
        bench "GPT-2 $model, T=$T, $steps steps (first 2 untimed)" tok/s tok_s "$gb" \
            bin/train_gpt2 -e "$model" -N "$mode" -t "$T" -x "$steps" -v 0 -sd 7 ;;
    vit | swin)
        [ -f "$fmnist/train-images-idx3-ubyte.gz" ] || { echo "no Fashion-MNIST in $fmnist (make deps)" >&2; exit 1; }
        if [ "$family" = vit ]; then gb=${VIT_B:-128}; steps=${VIT_STEPS:-12}; else gb=${SWIN_B:-128}; steps=${SWIN_STEPS:-6}; fi
        bench "$family (-e $family defaults), Fashion-MNIST, $steps steps (first 2 untimed)" images/s images_s "$gb" \
            bin/train_vit -e "$family" -N "$mode" -i "$fmnist" -x "$steps" -nt $((gb * steps)) -ne 16 -sd 7 ;;
    *) echo "FAMILIES: unknown '$family' (gpt2, vit, swin)" >&2; exit 2 ;;
    esac
done
