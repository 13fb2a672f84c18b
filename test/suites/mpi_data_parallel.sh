#!/usr/bin/env bash
# Data parallel on the CPU with MPI (llmc/comm.c): the all-reduce gives the
# exact mean over 1, 2 and 4 ranks (4 oversubscribed on 2 cores), and
# train_gpt2 with B/2 per rank on 2 ranks and B/4 on 4 ranks logs the same
# loss at every one of 20 steps as 1 rank with B (within 1e-5), in each mode.
set -uo pipefail
cd "$(dirname "$0")/../.."
if ! command -v mpirun > /dev/null || ! ./test_comm | grep -q "backend mpi"; then
    echo "FAIL: this build has no MPI (scripts/deps/mpi.txt installs Debian's Open MPI)"
    exit 1
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
# under make SAN=1: Open MPI's own allocations at exit are not ours to free
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
fails=0
for np in 1 2 4; do
    if mpirun --oversubscribe -np $np ./test_comm > /tmp/test_comm_$$.out 2>&1; then
        echo "ok   comm allreduce over $np ranks: $(tail -1 /tmp/test_comm_$$.out)"
    else
        echo "FAIL comm allreduce over $np ranks:"; sed 's/^/    /' /tmp/test_comm_$$.out; fails=$((fails + 1))
    fi
done
rm -f /tmp/test_comm_$$.out

work=${1:-$(mktemp -d)}/mpi
rm -rf "$work"; mkdir -p "$work"
cat llmc/*.c llmc/*.h > "$work/text.txt"
./text_to_shard "$work/text.txt" "$work/src" 0.1 > /dev/null || exit 1
for mode in ln rms cbwc; do
    for np in 1 2 4; do
        mpirun --oversubscribe -np $np ./train_gpt2 -N $mode -e d2c64h4v256t64 -i "$work/src_train_*.bin" \
            -j "$work/src_val_*.bin" -b $((4 / np)) -t 32 -x 20 -v 0 -l 2e-3 -c 0.1 -sd 11 \
            -o "$work/${mode}_np$np" > "$work/${mode}_np$np.out" 2>&1 ||
            { echo "FAIL $mode: mpirun -np $np: $(tail -2 "$work/${mode}_np$np.out")"; fails=$((fails + 1)); continue; }
        [ $np -eq 1 ] && continue
        worst=$(paste <(grep -oE '^s:[0-9]+ trl:[0-9.]+' "$work/${mode}_np1/main.log" | cut -d: -f3) \
                      <(grep -oE '^s:[0-9]+ trl:[0-9.]+' "$work/${mode}_np$np/main.log" | cut -d: -f3) |
                awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d; n++ } END { if (n != 20) print "missing"; else printf "%.2g", m }')
        if [ "$worst" != missing ] && awk -v w="$worst" 'BEGIN { exit !(w <= 1e-5) }'; then
            echo "ok   $mode: $np ranks x B=$((4 / np)) vs 1 rank x B=4: max loss difference over 20 steps $worst"
        else
            echo "FAIL $mode: $np ranks vs 1 rank: max loss difference $worst (tol 1e-5)"; fails=$((fails + 1))
        fi
    done
done
echo "$fails failed"
[ $fails -eq 0 ]
