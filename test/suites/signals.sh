#!/usr/bin/env bash
# Stop signals (llmc/core/stop_signal.h): SIGTERM, SIGINT and SIGUSR1 sent to a
# training run mid-way make it finish the step, write a checkpoint, print
# where and the command that resumes, and exit with 128 + signal; running
# that printed command (-y 1) ends with the uninterrupted run's main.log
# s: lines and final weights, bit for bit. A second signal during the step exits at once
# (128 + signal) with nothing written. For train_gpt2 (each signal),
# train_vit (SIGTERM) and, when built, the CUDA trainer under emulation
# (build/emu/train_gpt2fp32cu, SIGTERM). Also the run-folder rules
# (llmc/core/run_dir.h): a reused -o without -y, -y 1 without a checkpoint, a
# resume with another -b / -t / -e, stale *.tmp files.
set -uo pipefail
cd "$(dirname "$0")/../.."
. test/suite_outcome.sh
work=${1:-$(mktemp -d)}/signals
rm -rf "$work"; mkdir -p "$work"
export OMP_NUM_THREADS=1
fails=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
cat llmc/*/*.c llmc/*/*.h > "$work/text.txt"
bin/text_to_shard "$work/text.txt" "$work/src" 0.1 > /dev/null || exit 1

# wait_for_line FILE REGEX PID: until FILE has a line matching REGEX (at most
# 60 s); 1 if the process ended first
wait_for_line() {
    local i
    for i in $(seq 600); do
        grep -qE "$2" "$1" 2>/dev/null && return 0
        kill -0 "$3" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# stop_and_resume NAME SIGNAL STATUS PROGRAM LOG_REGEX FLAGS...: a run in
# $work/NAME gets SIGNAL once LOG_REGEX is in its main.log; it must exit with
# STATUS and leave a checkpoint, and the printed resume command must finish
# the run like $work/PREFIX.full (an uninterrupted run with the same flags,
# made once per NAME's prefix up to its first _)
stop_and_resume() {
    local name=$1 sig=$2 status=$3 prog=$4 regex=$5
    shift 5
    local dir=$work/$name full=$work/${name%%_*}.full
    [ -d "$full" ] || "$prog" "$@" -o "$full" > "$full.out" 2>&1 || { fail "$name: uninterrupted run: $(tail -2 "$full.out")"; return; }
    "$prog" "$@" -o "$dir" > "$dir.out" 2>&1 &
    local pid=$!
    wait_for_line "$dir/main.log" "$regex" $pid || { wait $pid; fail "$name: the run ended before $regex: $(tail -2 "$dir.out")"; return; }
    kill -s "$sig" $pid
    wait $pid
    local rc=$?
    local step
    step=$(sed -n "s/^stopped by SIG$sig after step \([0-9]*\); checkpoint .*/\1/p" "$dir.out")
    if [ $rc -ne "$status" ] || [ -z "$step" ]; then
        fail "$name: exit $rc (expected $status), $(tail -2 "$dir.out")"; return
    fi
    local padded
    padded=$(printf %08d "$step")
    [ -f "$dir/model_$padded.bin" ] && [ -f "$dir/state_$padded.bin" ] ||
        { fail "$name: no checkpoint of step $step in $dir: $(ls "$dir" | tr '\n' ' ')"; return; }
    local resume
    resume=$(sed -n 's/^resume with: //p' "$dir.out")
    [ -n "$resume" ] || { fail "$name: no resume command printed"; return; }
    eval "$resume" > "$dir.resumed.out" 2>&1 || { fail "$name: the printed resume command failed: $(tail -2 "$dir.resumed.out")"; return; }
    local final
    final=$(ls "$full" | grep -E '^model_[0-9]{8}\.bin$' | sort | tail -1)
    # the s: lines (the run record, "# ..." lines, names another folder)
    if diff <(grep '^s:' "$full/main.log") <(grep '^s:' "$dir/main.log") > "$dir.log.diff" &&
        cmp -s "$full/$final" "$dir/$final"; then
        ok "$name: SIG$sig -> exit $rc after step $step with its checkpoint; the printed command resumes to the uninterrupted log and $final"
    else
        fail "$name: resumed run differs from the uninterrupted one: $(head -3 "$dir.log.diff" | tr '\n' ' ')"
    fi
}

gflags=(-e d2c64h4v256t64 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin" -b 4 -t 64 -x 200
        -n 100 -v 50 -m 2 -l 2e-3 -u 4 -sd 5)
stop_and_resume gpt2_term TERM 143 bin/train_gpt2 '^s:5 trl' "${gflags[@]}"
stop_and_resume gpt2_int INT 130 bin/train_gpt2 '^s:5 trl' "${gflags[@]}"
stop_and_resume gpt2_usr1 USR1 138 bin/train_gpt2 '^s:5 trl' "${gflags[@]}"

fmnist=/usr/share/datasets/fashion-mnist
if [ -f "$fmnist/train-images-idx3-ubyte.gz" ]; then
    vflags=(-e vit -C 16 -L 1 -H 2 -i "$fmnist" -b 16 -nt 256 -ne 32 -x 300 -pe 1 -sd 5)
    stop_and_resume vit_term TERM 143 bin/train_vit '^s:5 trl' "${vflags[@]}"
else
    fail "no Fashion-MNIST in $fmnist (make deps)"
fi

emu=build/emu/train_gpt2fp32cu
if [ -x "$emu" ]; then
    eflags=(-e d1c32h2v256t32 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin" -b 1 -t 16 -x 12
            -n 6 -v 6 -m 1 -l 2e-3 -sd 5)
    stop_and_resume cuda_emu_term TERM 143 "$emu" '^s:2 trl' "${eflags[@]}"
else
    skip_part "the CUDA trainer: $emu not built (make emu; suite cuda_emu builds it)"
fi

# a second signal: exit at once with 128 + signal, no checkpoint completed
# (no state file; an interrupted write leaves only a *.tmp, which the next
# start removes). The signals are 5 ms apart (not 0: two pending SIGTERMs
# merge into one) and a step of this model takes 0.2-0.25 s on a quiet
# 2-core machine (B=8 took 55-60 ms, so a first signal in a step's last
# 20 ms, which the earlier 20 ms gap needed, came in 1 try of 3: CI saw 3 of 3
# at seed 40624966), so the second comes during the step (or, rarely, during
# the checkpoint write that follows it); if the whole checkpoint still
# finished first, that try proves nothing and is repeated (3 tries)
bflags=(-e d2c128h2v256t128 -i "$work/src_train_*.bin" -b 32 -t 128 -x 100 -v 0)
verdict="no try reached the second signal"
for try in 1 2 3; do
    rm -rf "$work/twice"
    bin/train_gpt2 "${bflags[@]}" -o "$work/twice" > "$work/twice.out" 2>&1 &
    pid=$!
    wait_for_line "$work/twice/main.log" '^s:2 trl' $pid || { wait $pid; verdict="run ended early: $(tail -2 "$work/twice.out")"; break; }
    kill -TERM $pid; sleep 0.005; t0=$(date +%s%N); kill -TERM $pid
    wait $pid; rc=$?
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    grep -q '^stopped by' "$work/twice.out" && ! grep -q 'second stop signal' "$work/twice.out" && continue
    states=$(ls "$work/twice" | grep -E '^state_' | tr '\n' ' ')
    if [ $rc -eq 143 ] && grep -q 'second stop signal' "$work/twice.out" && [ -z "$states" ]; then
        verdict=ok
        ok "second SIGTERM: exit 143 ${ms} ms after it, no checkpoint completed (files: $(ls "$work/twice" | tr '\n' ' '))"
    else
        verdict="exit $rc, files: $(ls "$work/twice" | tr '\n' ' '), $(tail -2 "$work/twice.out")"
    fi
    break
done
[ "$verdict" = ok ] || fail "second SIGTERM: $verdict"

# the run-folder rules
full=$work/gpt2.full
expect_error() { # NAME REGEX COMMAND...: exits 1 with an error matching REGEX
    local name=$1 regex=$2 out rc
    shift 2
    out=$("$@" 2>&1); rc=$?
    if [ $rc -eq 1 ] && grep -qE -- "$regex" <<< "$out"; then ok "$name: refused ($(grep -m1 '^error' <<< "$out" | cut -c1-110)...)"
    else fail "$name: exit $rc, $(tail -2 <<< "$out")"; fi
}
expect_error "reused -o without -y" "holds the checkpoints of an earlier run.*-y 1" \
    bin/train_gpt2 "${gflags[@]}" -o "$full"
expect_error "-y 1 without a checkpoint" "no checkpoint.*$work/empty" \
    bin/train_gpt2 "${gflags[@]}" -o "$work/empty" -y 1
# (-b 2 without -d halves the global batch, which run.txt records as -d)
expect_error "resume with another -b" "-d 128: this run in .* was started with -d 256" \
    bin/train_gpt2 "${gflags[@]}" -b 2 -o "$full" -y 1
expect_error "resume with another -t" "-t 32: this run .* was started with -t 64" \
    bin/train_gpt2 "${gflags[@]}" -t 32 -o "$full" -y 1
expect_error "resume with another -e" "-e d2c64h4v256t128: this run .* was started with -e d2c64h4v256t64" \
    bin/train_gpt2 "${gflags[@]}" -e d2c64h4v256t128 -o "$full" -y 1
expect_error "train_vit: reused -o without -y" "holds the checkpoints of an earlier run" \
    bin/train_vit "${vflags[@]}" -o "$work/vit.full"

# a damaged vision train state is refused, naming the file (llmc/vision/vision_checkpoint.c),
# and -y 1 falls back to the newest checkpoint that verifies
if [ -d "$work/vit.full" ]; then
    for damage in truncated flipped order; do
        d=$work/vit_$damage
        rm -rf "$d"; cp -r "$work/vit.full" "$d"
        st=$(ls "$d" | grep -E '^state_[0-9]{8}\.bin$' | sort | tail -1)
        size=$(stat -c %s "$d/$st")
        if [ $damage = truncated ]; then
            truncate -s -5 "$d/$st"; want="$st: file is .* bytes, expected .*: truncated"
        elif [ $damage = flipped ]; then # a bit of the AdamW moments: the CRC32 catches it
            printf '\001' | dd of="$d/$st" bs=1 seek=2048 conv=notrunc 2> /dev/null
            want="$st: checksum mismatch"
        else # the last order entry out of range, in a state without a checksum (slots 254-255 zero)
            printf '\377\377\377\177' | dd of="$d/$st" bs=1 seek=$((size - 4)) conv=notrunc 2> /dev/null
            head -c 8 /dev/zero | dd of="$d/$st" bs=1 seek=1016 conv=notrunc 2> /dev/null
            want="$st: the train order is not a permutation"
        fi
        # refused naming the file, and -y 1 falls back to the checkpoint before it
        out=$(bin/train_vit "${vflags[@]}" -o "$d" -y 1 2>&1); rc=$?
        if [ $rc -eq 0 ] && grep -qE -- "skipping the checkpoint of step [0-9]+: .*$want" <<< "$out" &&
            grep -q "resuming from step .*, the newest checkpoint .* that verifies" <<< "$out"; then
            ok "train_vit -y 1, $damage state: named and skipped, the one before resumed"
        else
            fail "train_vit -y 1, $damage state: exit $rc, $(grep -m2 -E 'skipping|error' <<< "$out")"
        fi
    done
fi

# stale temporary files go, named; then the resume is as before
stale=$work/stale
mkdir -p "$stale"
cp "$work/gpt2.full/model_00000100.bin" "$work/gpt2.full/state_00000100.bin" "$work/gpt2.full/run.txt" "$stale/"
head -c 1000 "$work/gpt2.full/model_00000100.bin" > "$stale/model_00000150.bin.tmp"
head -c 10 "$work/gpt2.full/state_00000100.bin" > "$stale/state_00000150.bin.tmp"
bin/train_gpt2 "${gflags[@]}" -x 105 -o "$stale" -y 1 > "$work/stale.out" 2>&1; rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c '^removed .*\.tmp, left by an interrupted write' "$work/stale.out")" = 2 ] &&
    ! ls "$stale" | grep -q '\.tmp$'; then
    ok "two stale *.tmp files removed at start, each named"
else
    fail "stale *.tmp: exit $rc, $(ls "$stale" | tr '\n' ' '), $(head -3 "$work/stale.out")"
fi
echo "$fails failed"
suite_exit $fails
