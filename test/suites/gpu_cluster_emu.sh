#!/usr/bin/env bash
# GPUs across hosts, under emulation (a logic check, not a device run): the
# emulated GPU trainers (make emu) as one process per namespace host
# (scripts/cluster/netns_cluster.sh), started by mpirun without -pf, so the
# NCCL unique id goes from rank 0 to the others by MPI_Bcast
# (llmc/cuda/multi_gpu.cuh) and the emulated NCCL carries the collectives
# over MPI between the processes (dev/cuda/emu/emu_nccl.cpp):
#   - train_gpt2fp32cu (ZeRO-1: reduce-scatter, all-gather, all-reduce of the
#     scalars; -z 0 == -z 1 is cuda_emu_features') and train_vitfp32cu, 2 hosts x 1
#     rank, end with the main.log s: lines and the model of the same run as
#     2 ranks in threads of one process (EMU_RANKS=2, the id through -pf),
#     bit for bit (both sum the ranks in rank order);
#   - under mpirun with -pf the emulated ranks cannot meet (the id file
#     works for real NCCL across processes, the emulation joins threads
#     only): refused with the reason, not a hang.
# NCCL's own transports and topology are not exercised (docs/cuda.md).
# Without namespaces: SKIP (exit 77); on CI as root where the kernel allows
# namespaces, a failure (test/cluster_common.sh).
# sanitized: skip the emulated NCCL's threads path runs under SAN in cuda_emu_features (its MPI path only here); namespaces x ASan's slower emulation add minutes
set -uo pipefail
cd "$(dirname "$0")/../.."
. test/cluster_common.sh
work=${1:-$(mktemp -d)}/gpu_cluster_emu
rm -rf "$work"; mkdir -p "$work"
cluster_start "$work" 2
export OMP_NUM_THREADS=1 ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
# no race detector (1.5-2.5x a run): these are the trainers' kernels, race-checked
# in cuda_emu and cuda_vit_emu (test/emu_race_subset.sh)
export EMU_RACECHECK=0
fails=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
make -s emu > "$work/build.log" 2>&1 || { tail -20 "$work/build.log"; echo "FAIL make emu"; exit 1; }
E=build/emu
make_token_data "$work"

# both NAME PROGRAM STEPS FLAGS...: 2 threads (-pf) and 2 processes on 2 hosts (MPI_Bcast)
both() {
    local name=$1 program=$E/$2 steps=$3; shift 3
    EMU_RANKS=2 "$program" "$@" -pf "$work/$name.id" -o "$work/${name}_threads" > "$work/${name}_threads.out" 2>&1 ||
        { fail "$name, 2 ranks as threads: $(tail -2 "$work/${name}_threads.out" | tr '\n' ' ')"; return; }
    "$MPIRUN" -np 2 --map-by node -x OMP_NUM_THREADS "$program" "$@" -o "$work/${name}_procs" \
        > "$work/${name}_procs.out" 2>&1 ||
        { fail "$name, 2 processes on h1 and h2: $(grep -E 'error|emulated' "$work/${name}_procs.out" | head -3 | tr '\n' ' ')"; return; }
    if ! grep -q "^multi-GPU: 2 processes joined, the NCCL id sent by MPI_Bcast (mpirun)" "$work/${name}_procs.out"; then
        fail "$name: the id did not go by MPI_Bcast: $(grep '^multi-GPU' "$work/${name}_procs.out")"
    elif same_run "$work/${name}_procs" "$work/${name}_threads" "$steps"; then
        ok "$name: 2 processes on 2 hosts (id by MPI_Bcast, collectives over MPI) == 2 threads (-pf): main.log and model bit for bit"
    else
        fail "$name: the processes' run differs from the threads': $(diff <(grep '^s:' "$work/${name}_procs/main.log") <(grep '^s:' "$work/${name}_threads/main.log") | head -2 | tr '\n' ' ')"
    fi
}
gpt=(-e d2c64h4v256t64 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin" -b 2 -t 32 -x 4 -v 2 -m 2
     -l 3e-3 -sd 5 -N cbwc)
both gpt2_z1 train_gpt2fp32cu 4 "${gpt[@]}" -z 1
fmnist=/usr/share/datasets/fashion-mnist
if [ -f "$fmnist/train-images-idx3-ubyte.gz" ]; then
    both vit train_vitfp32cu 4 -i "$fmnist" -C 24 -L 2 -H 3 -P 7 -x 4 -nt 48 -ne 16 -pe 1 -u 2 -f 1 \
        -N cbwc -sd 3 -b 4
else
    fail "no Fashion-MNIST in $fmnist (make deps)"
fi

# -pf with ranks in processes: the emulation's limit, named
out=$(timeout 120 "$MPIRUN" -np 2 --map-by node "$E/train_gpt2fp32cu" "${gpt[@]}" -pf "$work/pf.id" 2>&1); rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "emulated NCCL: the unique id was made by another process" <<< "$out"; then
    ok "emulated ranks in processes with -pf: refused (exit $rc), naming the reason"
else
    fail "emulated ranks in processes with -pf: exit $rc: $(grep -E 'error|emulated' <<< "$out" | head -2 | tr '\n' ' ')"
fi
echo "$fails failed"
suite_exit $((fails + cluster_skip_failed))
