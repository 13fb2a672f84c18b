#!/usr/bin/env bash
# Data parallel on the CPU with MPI (llmc/core/comm.c): the all-reduce gives the
# exact mean over 1, 2 and 4 ranks (4 oversubscribed on 2 cores), and
# train_gpt2 with B/2 per rank on 2 ranks and B/4 on 4 ranks logs the same
# loss at every one of 20 steps as 1 rank with B (within 1e-5), in each mode,
# with the ZeRO-1 sharded update (-z 1) and the all-reduce (-z 0); a ZeRO-1
# run resumed from its checkpoint continues the uninterrupted run. First the
# ZeRO-1 slices themselves (bin/test_zero_layout, randomised: seed printed).
set -uo pipefail
cd "$(dirname "$0")/../.."
if ! command -v mpirun > /dev/null || ! bin/test_comm | grep -q "backend mpi"; then
    echo "FAIL: this build has no MPI (scripts/deps/mpi.txt installs Debian's Open MPI)"
    exit 1
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
# under make SAN=1: Open MPI's own allocations at exit are not ours to free
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
fails=0
# the ZeRO-1 slices every trainer shares (llmc/core/zero_layout.h): a property test
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
if bin/test_zero_layout -sd "$seed" > /tmp/test_zero_layout_$$.out 2>&1; then
    echo "ok   zero_layout: $(sed -n 2p /tmp/test_zero_layout_$$.out) (seed $seed)"
else
    echo "FAIL zero_layout (seed $seed):"; sed 's/^/    /' /tmp/test_zero_layout_$$.out; fails=$((fails + 1))
fi
rm -f /tmp/test_zero_layout_$$.out
for np in 1 2 4; do
    if mpirun --oversubscribe -np $np bin/test_comm > /tmp/test_comm_$$.out 2>&1; then
        echo "ok   comm allreduce over $np ranks: $(tail -1 /tmp/test_comm_$$.out)"
    else
        echo "FAIL comm allreduce over $np ranks:"; sed 's/^/    /' /tmp/test_comm_$$.out; fails=$((fails + 1))
    fi
done
rm -f /tmp/test_comm_$$.out

work=${1:-$(mktemp -d)}/mpi
rm -rf "$work"; mkdir -p "$work"
cat llmc/*/*.c llmc/*/*.h > "$work/text.txt"
bin/text_to_shard "$work/text.txt" "$work/src" 0.1 > /dev/null || exit 1
# max |loss difference| over the 20 logged train steps of two runs (or "missing")
max_loss_diff() {
    paste <(grep -oE '^s:[0-9]+ trl:[0-9.]+' "$1/main.log" | cut -d: -f3) \
          <(grep -oE '^s:[0-9]+ trl:[0-9.]+' "$2/main.log" | cut -d: -f3) |
        awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d; n++ } END { if (n != 20) print "missing"; else printf "%.2g", m }'
}
train() { # NAME NP EXTRA_FLAGS...
    local name=$1 np=$2; shift 2
    mpirun --oversubscribe -np $np bin/train_gpt2 -e d2c64h4v256t64 -i "$work/src_train_*.bin" \
        -j "$work/src_val_*.bin" -b $((4 / np)) -t 32 -x 20 -v 0 -l 2e-3 -c 0.1 -sd 11 \
        -o "$work/$name" "$@" > "$work/$name.out" 2>&1 ||
        { echo "FAIL $name: mpirun -np $np: $(tail -2 "$work/$name.out")"; fails=$((fails + 1)); return 1; }
}
check() { # NAME REFERENCE WHAT
    local worst; worst=$(max_loss_diff "$work/$2" "$work/$1")
    if [ "$worst" != missing ] && awk -v w="$worst" 'BEGIN { exit !(w <= 1e-5) }'; then
        echo "ok   $3: max loss difference over 20 steps $worst"
    else
        echo "FAIL $3: max loss difference $worst (tol 1e-5)"; fails=$((fails + 1))
    fi
}
# -z 1 (default): ZeRO-1, reduce-scatter + sharded AdamW + all-gather; -z 0: all-reduce
for mode in ln rms cbwc; do
    train ${mode}_np1 1 -N $mode || continue
    for np in 2 4; do
        train ${mode}_np${np}_z1 $np -N $mode -z 1 &&
            check ${mode}_np${np}_z1 ${mode}_np1 "$mode: $np ranks x B=$((4 / np)), ZeRO-1 vs 1 rank x B=4"
    done
    train ${mode}_np2_z0 2 -N $mode -z 0 &&
        check ${mode}_np2_z0 ${mode}_np1 "$mode: 2 ranks x B=2, all-reduce vs 1 rank x B=4"
done
# ZeRO-1 checkpoints hold the whole AdamW state: resume at step 10 of 20 on 2
# ranks and match the uninterrupted run (the resumed run appends to main.log)
rm -rf "$work/cbwc_resume"
train cbwc_resume_first 2 -N cbwc -x 10 -n 5 -o "$work/cbwc_resume" &&
    train cbwc_resume_rest 2 -N cbwc -y 1 -o "$work/cbwc_resume" &&
    check cbwc_resume cbwc_np2_z1 "cbwc: 2 ranks ZeRO-1, killed at step 10 and resumed"
echo "$fails failed"
[ $fails -eq 0 ]
