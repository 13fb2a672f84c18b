#!/usr/bin/env bash
# The trainers' set-up over several ranks, written once per family
# (llmc/gpt2/gpt2_train_setup.c, llmc/vision/vit_train_start.c) and so the
# same on the CPU and, under the CUDA emulator (a logic check, not a device
# run), on the GPU:
#   - every rank must find the same newest checkpoint in -o: 2 ranks whose
#     -o folders differ (one working directory each, as host-local folders on
#     2 hosts) are refused, each rank naming what it found, by train_gpt2,
#     train_vit and the emulated train_gpt2fp32cu and train_vitfp32cu;
#   - and the same resumed one: rank 1's newest state damaged, so it would
#     fall back to an older step than rank 0's, is refused (train_gpt2);
#   - with several ranks rank 0 names the host and folder it writes -o to,
#     on the GPU as on the CPU (2 emulated ranks as threads, -pf);
#   - without -x, the run takes one epoch of the fewest batches any rank
#     has: 2 ranks reading shards of different lengths (rank 1 the shorter)
#     stop together after rank 1's count, less than rank 0's own (without the
#     minimum rank 0 would step on alone and the all-reduce would hang).
set -uo pipefail
cd "$(dirname "$0")/../.."
. test/suite_outcome.sh
if ! command -v mpirun > /dev/null || ! bin/test_comm | grep -q "backend mpi"; then
    echo "FAIL: this build has no MPI (scripts/deps/mpi.txt installs Debian's Open MPI)"
    exit 1
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} EMU_RACECHECK=0
work=${1:-$(mktemp -d)}/train_ranks
rm -rf "$work"; mkdir -p "$work"
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
cat llmc/core/*.c > "$work/text.txt"
head -c 20000 "$work/text.txt" > "$work/short.txt"
bin/text_to_shard "$work/text.txt" "$work/src" 0.1 > /dev/null || { echo "FAIL: text_to_shard"; exit 1; }
bin/text_to_shard "$work/short.txt" "$work/short" 0.1 > /dev/null || { echo "FAIL: text_to_shard"; exit 1; }
gpt=(-e d2c64h4v256t64 -j "$work/src_val_*.bin" -b 2 -t 32 -v 0 -l 3e-3 -sd 5)

# refused NAME PROGRAM WHAT FLAGS...: PROGRAM -o run, one rank in $work/NAME/h0
# (no checkpoint or the one there) and one in $work/NAME/h1, must fail with
# rank 1's message naming WHAT (a timeout is a hang: a failure)
refused() {
    local name=$1 program=$PWD/$2 what=$3; shift 3
    local out
    out=$(timeout 300 mpirun --oversubscribe -np 1 -wdir "$work/$name/h0" "$program" "$@" -o run : \
          -np 1 -wdir "$work/$name/h1" "$program" "$@" -o run 2>&1); local rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "rank 1 on host .* finds $what in run where rank 0 finds" <<< "$out"; then
        ok "$name: refused: $(grep -m1 -o "rank 1 on host .*checkpoint)" <<< "$out" | sed 's/on host [^ ]* //')"
    else
        bad "$name: not refused as expected (exit $rc): $(grep -m2 -iE 'error|rank' <<< "$out" | tr '\n' ' ')"
    fi
}

# rank 1 has a step-2 checkpoint, rank 0 none
mkdir -p "$work/gpt_cpu/h0" "$work/gpt_cpu/h1"
bin/train_gpt2 "${gpt[@]}" -i "$work/src_train_*.bin" -x 2 -o "$work/gpt_cpu/h1/run" > "$work/gpt_cpu.out" 2>&1 ||
    bad "train_gpt2: the step-2 run: $(tail -n 1 "$work/gpt_cpu.out")"
refused gpt_cpu bin/train_gpt2 "step 2" "${gpt[@]}" -i "$work/src_train_*.bin" -x 4 -y 1

# both have steps 2 and 4; rank 1's state_4 is damaged, so it would resume from 2
mkdir -p "$work/gpt_resumed/h0"
bin/train_gpt2 "${gpt[@]}" -i "$work/src_train_*.bin" -x 4 -n 2 -o "$work/gpt_resumed/h0/run" \
    > "$work/gpt_resumed.out" 2>&1 || bad "train_gpt2: the step-4 run: $(tail -n 1 "$work/gpt_resumed.out")"
cp -r "$work/gpt_resumed/h0" "$work/gpt_resumed/h1"
truncate -s 100 "$work/gpt_resumed/h1/run/state_00000004.bin"
refused gpt_resumed bin/train_gpt2 "step 2" "${gpt[@]}" -i "$work/src_train_*.bin" -x 6 -y 1

# the fewest batches: rank 0 reads the long shard, rank 1 the short one (a
# pattern per working directory); T = 32, B = 2, 2 ranks: (tokens - 1) / 64 / 2 steps
mkdir -p "$work/fewest/h0" "$work/fewest/h1"
ln -s "$work/src_train_000000.bin" "$work/fewest/h0/train.bin"
ln -s "$work/short_train_000000.bin" "$work/fewest/h1/train.bin"
out=$(timeout 300 mpirun --oversubscribe -np 1 -wdir "$work/fewest/h0" "$PWD/bin/train_gpt2" "${gpt[@]}" -i train.bin : \
      -np 1 -wdir "$work/fewest/h1" "$PWD/bin/train_gpt2" "${gpt[@]}" -i train.bin 2>&1); rc=$?
long_tokens=$(grep -oE '^train: [0-9]+ tokens' <<< "$out" | grep -oE '[0-9]+')
short_tokens=$(bin/train_gpt2 "${gpt[@]}" -i "$work/short_train_*.bin" -x 1 2>&1 | grep -oE '^train: [0-9]+ tokens' | grep -oE '[0-9]+')
steps=$(grep -oE '^step +[0-9]+/[0-9]+' <<< "$out" | tail -n 1 | grep -oE '[0-9]+/[0-9]+')
if [ -z "$long_tokens" ] || [ -z "$short_tokens" ]; then
    bad "fewest batches: no token counts (exit $rc): $(tail -n 2 <<< "$out" | tr '\n' ' ')"
else
    want=$(( (short_tokens - 1) / 64 / 2 )) rank0=$(( (long_tokens - 1) / 64 / 2 ))
    if [ $rc -eq 0 ] && [ "$steps" = "$want/$want" ] && [ "$want" -lt "$rank0" ]; then
        ok "fewest batches: 2 ranks stop together after rank 1's $want steps (rank 0's shard holds $rank0)"
    else
        bad "fewest batches: exit $rc, last step '$steps', want $want/$want (rank 0 alone: $rank0)"
    fi
fi

# train_vit: rank 1 has a step-2 checkpoint, rank 0 none
fmnist=/usr/share/datasets/fashion-mnist
vit=(-i "$fmnist" -C 24 -L 2 -H 3 -P 7 -nt 48 -ne 16 -pe 1 -u 2 -N cbwc -sd 3 -b 4)
if [ -f "$fmnist/train-images-idx3-ubyte.gz" ]; then
    mkdir -p "$work/vit_cpu/h0" "$work/vit_cpu/h1"
    bin/train_vit "${vit[@]}" -x 2 -o "$work/vit_cpu/h1/run" > "$work/vit_cpu.out" 2>&1 ||
        bad "train_vit: the step-2 run: $(tail -n 1 "$work/vit_cpu.out")"
    refused vit_cpu bin/train_vit "step 2" "${vit[@]}" -x 4 -y 1
else
    skip_part "train_vit: no Fashion-MNIST in $fmnist"
fi

# the emulated GPU trainers, 2 processes started by mpirun (the NCCL id by
# MPI_Bcast, the emulated collectives over MPI)
if make -s build/emu/train_gpt2fp32cu build/emu/train_vitfp32cu > "$work/build.log" 2>&1; then
    E=build/emu
    mkdir -p "$work/gpt_emu/h0" "$work/gpt_emu/h1"
    $E/train_gpt2fp32cu "${gpt[@]}" -i "$work/src_train_*.bin" -x 2 -o "$work/gpt_emu/h1/run" \
        > "$work/gpt_emu.out" 2>&1 || bad "train_gpt2fp32cu: the step-2 run: $(tail -n 1 "$work/gpt_emu.out")"
    refused gpt_emu $E/train_gpt2fp32cu "step 2" "${gpt[@]}" -i "$work/src_train_*.bin" -x 4 -y 1
    # announced NAME PROGRAM FLAGS...: 2 ranks as threads; rank 0 names -o
    announced() {
        local name=$1 program=$2; shift 2
        EMU_RANKS=2 "$program" "$@" -x 1 -pf "$work/$name.id" -o "$work/$name" > "$work/$name.out" 2>&1 &&
            grep -q "^output: rank 0 on host .* writes main.log and the checkpoints to $work/$name\$" "$work/$name.out" &&
            ok "$name: 2 ranks: rank 0 names its host and $work/$name" ||
            bad "$name: no 'output: rank 0 on host ...' line: $(grep -m2 -E '^output|error' "$work/$name.out" | tr '\n' ' ')"
    }
    announced gpt_emu_output $E/train_gpt2fp32cu "${gpt[@]}" -i "$work/src_train_*.bin"
    if [ -f "$fmnist/train-images-idx3-ubyte.gz" ]; then
        announced vit_emu_output $E/train_vitfp32cu "${vit[@]}"
        mkdir -p "$work/vit_emu/h0" "$work/vit_emu/h1"
        $E/train_vitfp32cu "${vit[@]}" -x 2 -o "$work/vit_emu/h1/run" > "$work/vit_emu.out" 2>&1 ||
            bad "train_vitfp32cu: the step-2 run: $(tail -n 1 "$work/vit_emu.out")"
        refused vit_emu $E/train_vitfp32cu "step 2" "${vit[@]}" -x 4 -y 1
    fi
else
    bad "make the emulated trainers: $(tail -n 3 "$work/build.log" | tr '\n' ' ')"
fi
echo "$fails failed"
suite_exit $fails
