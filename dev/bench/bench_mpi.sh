#!/usr/bin/env bash
# Data-parallel efficiency on this machine: 1 rank x 2 threads vs 2 ranks x 1
# thread (mpirun, Debian Open MPI) with the all-reduce (-z 0) and with the
# ZeRO-1 sharded update (-z 1), same model, same global batch, interleaved
# rounds; prints the median tok/s of the timed steps of each run and the
# ratios. Not a test: it asserts nothing.
#   dev/bench/bench_mpi.sh   (env: MODEL=d6 GLOBAL_B=32 T=64 STEPS=6 ROUNDS=2 MODE=ln)
set -euo pipefail
cd "$(dirname "$0")/../.."
model=${MODEL:-d6}; gb=${GLOBAL_B:-32}; T=${T:-64}; steps=${STEPS:-6}; rounds=${ROUNDS:-2}
mode=${MODE:-ln}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -e data/kjv/kjv_train_000000.bin ] || scripts/prepare_kjv.sh > /dev/null
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
echo "model $model, mode $mode, global batch ${gb}x$T, $steps steps (first 2 untimed), $rounds rounds, commit $(git rev-parse --short HEAD)"
# median tok/s of the step lines after the first two
tok_s() { grep -oE '[0-9]+ tok/s' "$1" | awk 'NR > 2 {print $1}' | sort -n |
          awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
flags=(-e "$model" -N "$mode" -t "$T" -x "$steps" -v 0 -sd 7)
for r in $(seq 1 "$rounds"); do
    OMP_NUM_THREADS=2 bin/train_gpt2 "${flags[@]}" -b "$gb" > "$out/one.log"
    tok_s "$out/one.log" >> "$out/one"
    for z in 0 1; do
        OMP_NUM_THREADS=1 mpirun --oversubscribe -np 2 bin/train_gpt2 "${flags[@]}" -b $((gb / 2)) -z $z \
            > "$out/two_z$z.log"
        tok_s "$out/two_z$z.log" >> "$out/two_z$z"
    done
done
med() { sort -n "$1" | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
one=$(med "$out/one"); z0=$(med "$out/two_z0"); z1=$(med "$out/two_z1")
printf "%-34s %10s %8s\n" run "tok/s" ratio
printf "%-34s %10s %8s\n" "1 rank x 2 threads" "$one" 1.00
printf "%-34s %10s %8.2f\n" "2 ranks x 1 thread, all-reduce" "$z0" "$(awk -v a="$z0" -v b="$one" 'BEGIN {print a / b}')"
printf "%-34s %10s %8.2f\n" "2 ranks x 1 thread, ZeRO-1" "$z1" "$(awk -v a="$z1" -v b="$one" 'BEGIN {print a / b}')"
