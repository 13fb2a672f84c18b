#!/usr/bin/env bash
# train_vit data parallel over MPI (llmc/vision/classifier_parallel.h): 2 ranks x
# -b 16 against 1 rank x -b 32, the same global batches (no flips: with
# several ranks each flips from its own stream), 20 steps, for ViT and Swin,
# ln and cbwc, ZeRO-1 (-z 1) and the all-reduce (-z 0). Each rank's half-batch
# gradient is summed over fewer images than the one batch's, so the mean of
# the halves rounds differently (not bit-exact): the logged train and test
# losses must agree within 1e-6 relative plus one unit of main.log's 6th
# decimal (printing two values 1e-9 apart can round them 1e-6 apart), the
# test accuracy exactly. A 2-rank ZeRO-1 run with flips, resumed (-y 1) from
# its step-10 checkpoint, ends with the uninterrupted run's main.log s: lines
# and model file bit for bit (the gathered moments are in the state; each
# rank's flips are seeded per batch); the same folder resumes on 1 rank with
# the same global batch (-b 32), and another global batch is refused;
# SIGUSR1 to rank 1 alone stops both ranks after the same step with rank 0's
# checkpoint (the stop flag is max-reduced every step). When the emulated GPU
# trainer is built, 2 CPU ranks with flips log the losses of 2 GPU ranks.
set -uo pipefail
cd "$(dirname "$0")/../.."
. test/suite_outcome.sh
if ! command -v mpirun > /dev/null || ! bin/test_comm | grep -q "backend mpi"; then
    echo "FAIL: this build has no MPI (scripts/deps/mpi.txt installs Debian's Open MPI)"
    exit 1
fi
fmnist=/usr/share/datasets/fashion-mnist
[ -f "$fmnist/train-images-idx3-ubyte.gz" ] || { echo "FAIL: no Fashion-MNIST in $fmnist (make deps)"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
# under make SAN=1: Open MPI's own allocations at exit are not ours to free
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
work=${1:-$(mktemp -d)}/mpi_vit
rm -rf "$work"; mkdir -p "$work"
fails=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
seed=${FOLDNORM_TEST_SEED:-$RANDOM}

# run NAME NP FLAGS...: train_vit on NP ranks (NP 1: no mpirun) into $work/NAME
run() {
    local name=$1 np=$2; shift 2
    local launch=()
    [ "$np" -gt 1 ] && launch=(mpirun --oversubscribe -np "$np")
    "${launch[@]}" bin/train_vit "$@" -o "$work/$name" > "$work/$name.out" 2>&1 ||
        { fail "$name: exit $?: $(tail -2 "$work/$name.out" | tr '\n' ' ')"; return 1; }
}
# same_losses A B [REL [STEPS]]: every trl and tel of A's main.log within REL
# (default 1e-6) relative plus one unit of the 6th decimal of B's, the same
# lines, at least STEPS (default 20); prints the largest relative difference
same_losses() {
    awk -F'[: ]' -v tol="${3:-1e-6}" -v want="${4:-20}" '/^s:[0-9]+ (trl|tel):/ { k = $2 " " $3; v = $4 + 0
                   if (FNR == NR) { a[k] = v; n++; next }
                   m++; if (!(k in a)) { bad = 1; next }
                   d = a[k] - v; if (d < 0) d = -d; r = d / (v < 0 ? -v : v)
                   if (r > worst) worst = r
                   if (d > tol * (v < 0 ? -v : v) + 1e-6) bad = 1 }
                   END { printf "%.1e", worst; exit (bad || n < want || n != m) }' "$1/main.log" "$2/main.log"
}
same_accuracy() {
    [ -n "$(grep '^s:[0-9]* tea:' "$1/main.log")" ] &&
        [ "$(grep '^s:[0-9]* tea:' "$1/main.log")" = "$(grep '^s:[0-9]* tea:' "$2/main.log")" ]
}

common=(-i "$fmnist" -nt 256 -ne 64 -x 20 -u 2 -l 3e-3 -pe 5 -sd "$seed")
vit=(-e vit -C 16 -L 1 -H 2)
swin=(-e swin -E 8 -P 2 -D 2,2 -A 2,2 -W 7)
for family in vit swin; do
    shape=${family}[@]
    for mode in ln cbwc; do
        tag=${family}_$mode
        run "${tag}_np1" 1 "${!shape}" -N $mode "${common[@]}" -f 0 -b 32 || continue
        for z in 1 0; do
            run "${tag}_np2_z$z" 2 "${!shape}" -N $mode "${common[@]}" -f 0 -b 16 -z $z || continue
            if worst=$(same_losses "$work/${tag}_np2_z$z" "$work/${tag}_np1") &&
                same_accuracy "$work/${tag}_np2_z$z" "$work/${tag}_np1"; then
                ok "$family $mode: 2 ranks x -b 16 (-z $z) == 1 rank x -b 32: 20 losses within $worst relative, test accuracy equal"
            else
                fail "$family $mode: 2 ranks (-z $z) vs 1 rank (worst relative difference ${worst:-?}):"
                paste <(grep -E '^s:[0-9]+ (trl|tel|tea)' "$work/${tag}_np2_z$z/main.log") \
                      <(grep -E '^s:[0-9]+ (trl|tel|tea)' "$work/${tag}_np1/main.log") | sed 's/^/     /'
            fi
        done
    done
done

# resume: 2 ranks, ZeRO-1, flips on, checkpoints every 5 steps (and at the
# epoch ends, steps 8 and 16); a copy cut back to step 10 resumes to the end
res=("${vit[@]}" -N cbwc "${common[@]}" -f 1 -b 16 -n 5)
if run resume_full 2 "${res[@]}"; then
    cut=$work/resume_cut
    cp -r "$work/resume_full" "$cut"
    rm -f "$cut"/model_000000{15,16,20}.bin "$cut"/state_000000{15,16,20}.bin
    if mpirun --oversubscribe -np 2 bin/train_vit "${res[@]}" -o "$cut" -y 1 > "$cut.out" 2>&1 &&
        grep -q "resumed from $cut at step 10" "$cut.out" &&
        diff <(grep '^s:' "$work/resume_full/main.log") <(grep '^s:' "$cut/main.log") > "$cut.diff" &&
        cmp -s "$work/resume_full/model_00000020.bin" "$cut/model_00000020.bin"; then
        ok "2 ranks, ZeRO-1, flips: resumed at step 10 of 20, the uninterrupted main.log and model_00000020.bin bit for bit"
    else
        fail "2-rank resume differs from the uninterrupted run: $(tail -2 "$cut.out" | tr '\n' ' ') $(head -4 "$cut.diff" | tr '\n' ' ')"
    fi
    # the folder of a 2-rank run on 1 rank: -b 16 is another global batch
    # (refused, naming both), -b 32 the same (resumes from the newest checkpoint)
    one=$work/resume_one
    cp -r "$work/resume_full" "$one"
    rm -f "$one"/model_000000{15,16,20}.bin "$one"/state_000000{15,16,20}.bin
    out=$(bin/train_vit "${res[@]}" -o "$one" -y 1 2>&1); rc=$?
    if [ $rc -ne 0 ] && grep -q -- "-b 16: this run in .* was started with -b 32" <<< "$out"; then
        ok "a 2-rank x -b 16 run resumed on 1 rank x -b 16: refused (exit $rc), naming the global batches"
    else
        fail "a 2-rank x -b 16 run resumed on 1 rank x -b 16: exit $rc: $(tail -2 <<< "$out" | tr '\n' ' ')"
    fi
    out=$(bin/train_vit "${vit[@]}" -N cbwc "${common[@]}" -f 1 -b 32 -n 5 -o "$one" -y 1 2>&1); rc=$?
    if [ $rc -eq 0 ] && grep -q "resumed from $one at step 10" <<< "$out" && [ -f "$one/model_00000020.bin" ]; then
        ok "a 2-rank x -b 16 run resumed on 1 rank x -b 32 from step 10 to the end"
    else
        fail "a 2-rank x -b 16 run resumed on 1 rank x -b 32: exit $rc: $(tail -2 <<< "$out" | tr '\n' ' ')"
    fi
fi

# CPU and GPU ranks see the same images and flips: 2 ranks of train_vit with
# flips against 2 emulated NCCL ranks of train_vitfp32cu (when built: make emu)
# within 1e-5 relative (the emulated GEMMs sum in double, OpenBLAS in fp32;
# cuda_vit_emu.sh's tolerance); one rank with -b 8 flips other images and differs
emu=build/emu/train_vitfp32cu
if [ -x "$emu" ]; then
    dp=(-i "$fmnist" -C 24 -L 2 -H 3 -P 7 -x 4 -nt 48 -ne 16 -pe 1 -u 2 -f 1 -N cbwc -sd "$seed")
    if EMU_RANKS=2 "$emu" "${dp[@]}" -b 4 -pf "$work/nccl.id" -o "$work/gpu2" > "$work/gpu2.out" 2>&1 &&
        run cpu2 2 "${dp[@]}" -b 4 && worst=$(same_losses "$work/cpu2" "$work/gpu2" 1e-5 4) &&
        same_accuracy "$work/cpu2" "$work/gpu2"; then
        ok "flips: 2 CPU ranks == 2 emulated GPU ranks (train_vitfp32cu): 4 losses within $worst relative, test accuracy equal"
    else
        fail "flips: 2 CPU ranks vs 2 emulated GPU ranks (worst ${worst:-?}): $(tail -2 "$work/gpu2.out" | tr '\n' ' ')"
        paste <(grep -E '^s:[0-9]+ (trl|tea)' "$work/cpu2/main.log") <(grep -E '^s:[0-9]+ (trl|tea)' "$work/gpu2/main.log") | sed 's/^/     /'
    fi
    if run cpu1 1 "${dp[@]}" -b 8 && ! same_losses "$work/cpu1" "$work/gpu2" 1e-5 4 > /dev/null; then
        ok "flips: the control, 1 rank with -b 8 (its own flips), differs from 2 ranks"
    else
        fail "flips: 1 rank with -b 8 logs the 2-rank losses: the comparison cannot tell flips apart"
    fi
else
    skip_part "CPU vs GPU ranks with flips: $emu not built (make emu; suite cuda_vit_emu builds it)"
fi

# a stop signal to rank 1 alone: rank 0 learns of it through the max-reduction,
# both stop after the same step, rank 0 writes that step's checkpoint and says
# so, mpirun exits non-zero (138 from the ranks)
mpirun --oversubscribe -np 2 bin/train_vit "${vit[@]}" "${common[@]}" -x 2000 -nt 2560 -b 16 -pe 1 \
    -o "$work/usr1" > "$work/usr1.out" 2>&1 &
mpirun_pid=$!
for _ in $(seq 600); do grep -q '^step     3/' "$work/usr1.out" 2>/dev/null && break; sleep 0.1; done
r1=
for c in $(ps -o pid= --ppid $mpirun_pid); do
    tr '\0' '\n' < "/proc/$c/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && r1=$c
done
[ -n "$r1" ] && kill -USR1 "$r1"
wait $mpirun_pid; rc=$?
step=$(sed -n 's/^stopped by SIGUSR1 after step \([0-9]*\); checkpoint .*/\1/p' "$work/usr1.out")
if [ -n "$r1" ] && [ $rc -ne 0 ] && [ -n "$step" ] && [ "$step" -lt 2000 ] &&
    [ -f "$work/usr1/state_$(printf %08d "$step").bin" ] &&
    grep -q "^resume with: mpirun -np 2 " "$work/usr1.out"; then
    ok "SIGUSR1 to rank 1 alone: both ranks stopped after step $step, rank 0 wrote its checkpoint (mpirun exit $rc)"
else
    fail "SIGUSR1 to rank 1 (pid '${r1}'): exit $rc, step '${step}': $(tail -3 "$work/usr1.out" | tr '\n' ' ')"
fi
echo "$fails failed"
suite_exit $fails
