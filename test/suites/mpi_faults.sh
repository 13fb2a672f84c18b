#!/usr/bin/env bash
# MPI runs that end early (llmc/core/comm.c, docs/reliability.md):
#   1. a stop signal (SIGUSR1) sent to rank 1 alone: the ranks agree on it
#      (an all-reduce of the flag every step), all stop after the same step,
#      rank 0 writes the checkpoint, every rank exits 138; resuming with
#      mpirun -y 1 ends with the uninterrupted 2-rank run's log and weights
#   2. a dead rank: rank 1, then rank 0, killed with -9 mid-run: mpirun and
#      every other rank exit non-zero within 60 s (Open MPI aborts the job when
#      a rank dies; the seconds it took are printed)
#   3. a rank that never arrives (test_comm -st: rank 1 sleeps 60 s before a
#      collective) with FOLDNORM_COMM_TIMEOUT=3: the waiting rank's watchdog
#      (llmc/core/comm_watchdog.h) names the collective and the job ends
#      non-zero before the late rank would have arrived
set -uo pipefail
cd "$(dirname "$0")/../.."
if ! command -v mpirun > /dev/null || ! bin/test_comm | grep -q "backend mpi"; then
    echo "FAIL: this build has no MPI (scripts/deps/mpi.txt installs Debian's Open MPI)"
    exit 1
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
work=${1:-$(mktemp -d)}/mpi_faults
rm -rf "$work"; mkdir -p "$work"
cat llmc/*/*.c llmc/*/*.h > "$work/text.txt"
bin/text_to_shard "$work/text.txt" "$work/src" 0.1 > /dev/null || exit 1
fails=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
flags=(-e d2c64h4v256t64 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin" -b 2 -t 32 -v 50 -m 1
       -l 2e-3 -sd 11 -n 200)

# rank_pid MPIRUN_PID RANK: the pid of that rank (a child of mpirun), or nothing
rank_pid() {
    local c
    for c in $(ps -o pid= --ppid "$1"); do
        tr '\0' '\n' < "/proc/$c/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" && echo "$c"
    done
}
# start NAME STEPS: mpirun -np 2 in the background (sets mpirun_pid), then
# waits (at most 60 s) for step 3 in its output and sets r0 and r1
start() {
    mpirun --oversubscribe -np 2 bin/train_gpt2 "${flags[@]}" -x "$2" -o "$work/$1" > "$work/$1.out" 2>&1 &
    mpirun_pid=$!
    local i
    for i in $(seq 600); do
        grep -q '^step    3/' "$work/$1.out" 2>/dev/null && break
        sleep 0.1
    done
    r0=$(rank_pid $mpirun_pid 0); r1=$(rank_pid $mpirun_pid 1)
}

# 1. SIGUSR1 to rank 1 only
mpirun --oversubscribe -np 2 bin/train_gpt2 "${flags[@]}" -x 400 -o "$work/full" > "$work/full.out" 2>&1 ||
    { echo "FAIL uninterrupted run: $(tail -3 "$work/full.out")"; exit 1; }
start usr1 400
if [ -n "$r1" ]; then
    kill -USR1 "$r1"
    wait $mpirun_pid; rc=$?
    step=$(sed -n 's/^stopped by SIGUSR1 after step \([0-9]*\); checkpoint .*/\1/p' "$work/usr1.out")
    resume=$(sed -n 's/^resume with: //p' "$work/usr1.out")
    if [ $rc -ne 0 ] && [ -n "$step" ] && [ -f "$work/usr1/state_$(printf %08d "$step").bin" ] &&
        [[ $resume == "mpirun -np 2 "* ]]; then
        ok "SIGUSR1 to rank 1 alone: mpirun exit $rc, both ranks stopped after step $step, checkpoint written"
        # the printed command, with this machine's mpirun flags
        eval "mpirun --oversubscribe ${resume#mpirun }" > "$work/usr1_resumed.out" 2>&1 ||
            fail "resume: $(tail -2 "$work/usr1_resumed.out")"
        if diff <(grep '^s:' "$work/full/main.log") <(grep '^s:' "$work/usr1/main.log") > /dev/null &&
            cmp -s "$work/full/model_00000400.bin" "$work/usr1/model_00000400.bin"; then
            ok "the resumed 2-rank run ends with the uninterrupted run's main.log s: lines and weights"
        else
            fail "the resumed 2-rank run differs: $(diff <(grep '^s:' "$work/full/main.log") <(grep '^s:' "$work/usr1/main.log") | head -3 | tr '\n' ' ')"
        fi
    else
        fail "SIGUSR1 to rank 1: exit $rc, step '$step', resume '$resume', $(tail -3 "$work/usr1.out")"
    fi
else
    kill $mpirun_pid 2>/dev/null; wait $mpirun_pid; fail "no rank 1 under mpirun $mpirun_pid: $(tail -3 "$work/usr1.out")"
fi

# 2. kill -9 of one rank: the others go within 60 s
for victim in 1 0; do
    start dead$victim 100000
    if [ -z "$r0" ] || [ -z "$r1" ]; then
        kill $mpirun_pid 2>/dev/null; wait $mpirun_pid; fail "rank pids not found: $(tail -3 "$work/dead$victim.out")"; continue
    fi
    if [ $victim = 1 ]; then dead=$r1 peer=$r0; else dead=$r0 peer=$r1; fi
    t0=$(date +%s%N)
    kill -9 "$dead"
    gone=""
    for i in $(seq 600); do
        if ! kill -0 $mpirun_pid 2>/dev/null && ! kill -0 "$peer" 2>/dev/null; then gone=yes; break; fi
        sleep 0.1
    done
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    if [ -n "$gone" ]; then
        wait $mpirun_pid; rc=$?
        if [ $rc -ne 0 ]; then
            ok "rank $victim killed with -9: mpirun (exit $rc) and the other rank gone in $ms ms"
        else
            fail "rank $victim killed with -9: mpirun exited 0"
        fi
    else
        fail "rank $victim killed with -9: still running after $ms ms"
        kill -9 "$peer" 2>/dev/null; kill $mpirun_pid 2>/dev/null; wait $mpirun_pid
    fi
done
# 3. the collectives' deadline: the job must end before the late rank would
# have arrived (60 s: the bound is the test's own stall, not a speed; it
# ends after ~3 s)
t0=$(date +%s%N)
FOLDNORM_COMM_TIMEOUT=3 timeout 120 mpirun --oversubscribe -np 2 -x FOLDNORM_COMM_TIMEOUT bin/test_comm -st 60 \
    > "$work/stall.out" 2>&1; rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $ms -lt 60000 ] &&
    grep -q "error: rank 0 on host .*: MPI_Allreduce of 1 values has not completed in [0-9]* s (FOLDNORM_COMM_TIMEOUT)" "$work/stall.out"; then
    ok "a rank 60 s late to a collective, FOLDNORM_COMM_TIMEOUT=3: rank 0 names MPI_Allreduce, the job ends (exit $rc) in $ms ms"
else
    fail "collective deadline: exit $rc after $ms ms: $(grep error "$work/stall.out" | head -2 | tr '\n' ' ')"
fi
echo "$fails failed"
[ $fails -eq 0 ]
