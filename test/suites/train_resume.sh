#!/usr/bin/env bash
# train_gpt2 end to end on a real text shard (this repository's own C
# sources, one token per byte): the loss falls, main.log holds llm.c-style
# lines, and resuming from the step-4 checkpoint reproduces the uninterrupted
# run's loss lines and final weights bit for bit, in every norm mode. And on
# another split of the same global batch (4 sequences, -d 128): a checkpoint
# of step 10 written by 2 MPI ranks x -b 2 (one host) resumed as 1 process x
# -b 4 and as 1 process x -b 2 x 2 micro-steps logs the losses of an
# uninterrupted 1 x -b 4 run within 1e-5 (other sum orders; the loader
# cursor is rescaled from 10 to 20 per-rank batches: without the rescale the
# second split reads other data and differs by ~0.5). The split onto
# 2 hosts x 2 ranks is cluster_train's.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/train_resume
rm -rf "$work"; mkdir -p "$work"
cat llmc/*/*.c llmc/*/*.h train_gpt2.c > "$work/text.txt"
bin/text_to_shard "$work/text.txt" "$work/src" 0.1 > /dev/null || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
for mode in ln rms cbwc prms; do
    flags=(-N $mode -e d2c64h4v256t64 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin"
           -b 4 -t 32 -x 8 -n 4 -v 4 -m 2 -l 3e-3 -u 2 -q 0.1 -c 0.1 -sd 7)
    bin/train_gpt2 "${flags[@]}" -o "$work/$mode.full" > "$work/$mode.full.out" 2>&1 || { fail "$mode: full run"; continue; }
    mkdir -p "$work/$mode.resumed"
    cp "$work/$mode.full/model_00000004.bin" "$work/$mode.full/state_00000004.bin" "$work/$mode.resumed/"
    bin/train_gpt2 "${flags[@]}" -o "$work/$mode.resumed" -y 1 > "$work/$mode.resumed.out" 2>&1 || { fail "$mode: resumed run"; continue; }
    log=$work/$mode.full/main.log
    grep -qE '^s:8 trl:[0-9.]+' "$log" && grep -qE '^s:8 tel:[0-9.]+' "$log" || fail "$mode: main.log lacks s:8 trl/tel lines"
    first=$(grep -oE '^s:1 trl:[0-9.]+' "$log" | cut -d: -f3)
    lastl=$(grep -oE '^s:8 trl:[0-9.]+' "$log" | cut -d: -f3)
    awk -v a="$first" -v b="$lastl" 'BEGIN { exit !(b < a - 0.1) }' || fail "$mode: loss did not fall ($first -> $lastl)"
    diff <(grep -E '^s:[5-8] trl' "$log") <(grep -E '^s:[5-8] trl' "$work/$mode.resumed/main.log") > /dev/null \
        || fail "$mode: resumed loss lines differ from the uninterrupted run"
    cmp -s "$work/$mode.full/model_00000008.bin" "$work/$mode.resumed/model_00000008.bin" \
        || fail "$mode: resumed final weights differ"
    grep -q "mode $mode" "$work/$mode.full.out" || fail "$mode: progress output does not name the mode"
    echo "ok   $mode: loss $first -> $lastl, resume bit-exact"
done
# the other schedules, resumed mid-decay (wsd decays over steps 2-8 with -kd
# 0.75): the same lr and loss lines and final weights, bit for bit
for k in linear wsd; do
    kflags=(-N ln -e d2c64h4v256t64 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin"
            -b 2 -t 16 -x 8 -n 4 -v 0 -l 3e-3 -u 1 -q 0.1 -k $k -kd 0.75 -sd 5)
    bin/train_gpt2 "${kflags[@]}" -o "$work/$k.full" > "$work/$k.full.out" 2>&1 || { fail "-k $k: full run"; continue; }
    mkdir -p "$work/$k.resumed"
    cp "$work/$k.full/model_00000004.bin" "$work/$k.full/state_00000004.bin" "$work/$k.resumed/"
    bin/train_gpt2 "${kflags[@]}" -o "$work/$k.resumed" -y 1 > "$work/$k.resumed.out" 2>&1 || { fail "-k $k: resumed run"; continue; }
    lrs=$(grep -oE '^s:[5-8] trl:[^ ]+ lr:[^ ]+' "$work/$k.full/main.log" | sed 's/.*lr://' | sort -u | wc -l)
    if diff <(grep -E '^s:[5-8] trl' "$work/$k.full/main.log") <(grep -E '^s:[5-8] trl' "$work/$k.resumed/main.log") > /dev/null &&
        cmp -s "$work/$k.full/model_00000008.bin" "$work/$k.resumed/model_00000008.bin" && [ "$lrs" -eq 4 ]; then
        echo "ok   -k $k: resumed at step 4 mid-decay (4 distinct lrs after it), lr and loss lines and weights bit-exact"
    else
        fail "-k $k: the resumed run differs (or the lr did not decay after step 4: $lrs distinct lrs)"
    fi
done
# with samples every 2 steps: the resumed run's RNG (in the final state file)
# and its later samples equal the uninterrupted run's (no second sample at the
# step resumed from)
sflags=(-N ln -e d2c64h4v256t64 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin" -b 2 -t 16 -x 6 -n 3 -s 2 -g 8 -sd 11)
bin/train_gpt2 "${sflags[@]}" -o "$work/s.full" > "$work/s.full.out" 2>&1 || fail "sampling run"
mkdir -p "$work/s.resumed"
cp "$work/s.full/model_00000003.bin" "$work/s.full/state_00000003.bin" "$work/s.resumed/"
bin/train_gpt2 "${sflags[@]}" -o "$work/s.resumed" -y 1 > "$work/s.resumed.out" 2>&1 || fail "resumed sampling run"
cmp -s "$work/s.full/state_00000006.bin" "$work/s.resumed/state_00000006.bin" &&
    diff <(grep '^sample' "$work/s.full.out" | tail -2) <(grep '^sample' "$work/s.resumed.out") > /dev/null &&
    echo "ok   sampling: resumed RNG state and samples equal the uninterrupted run's" ||
    fail "sampling: the resumed run's RNG or samples differ"

# resume on another split of the same global batch (the single-host splits)
if ! command -v mpirun > /dev/null || ! bin/test_comm | grep -q "backend mpi"; then
    fail "this build has no MPI (scripts/deps/mpi.txt installs Debian's Open MPI): the 2-rank checkpoint"
else
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    gflags=(-e d2c64h4v256t64 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin" -t 32 -v 0 -l 2e-3
            -c 0.1 -sd 11)
    # max |trl difference| over 20 train steps of two main.logs (NaN or a missing step: "missing")
    max_trl_diff() {
        paste <(grep -oE '^s:[0-9]+ trl:[0-9.]+' "$1/main.log" | cut -d: -f3) \
              <(grep -oE '^s:[0-9]+ trl:[0-9.]+' "$2/main.log" | cut -d: -f3) |
            awk '{ d = $1 - $2; if (d < 0) d = -d; if (!(d <= m)) m = d; n++ }
                 END { if (n != 20) print "missing"; else printf "%.2g", m }'
    }
    if ! bin/train_gpt2 "${gflags[@]}" -b 4 -x 20 -o "$work/split_ref" > "$work/split_ref.out" 2>&1; then
        fail "split: the uninterrupted 1 x -b 4 run: $(tail -2 "$work/split_ref.out" | tr '\n' ' ')"
    elif ! OMP_NUM_THREADS=1 ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} mpirun --oversubscribe -np 2 -x OMP_NUM_THREADS bin/train_gpt2 "${gflags[@]}" \
            -b 2 -x 10 -n 5 -o "$work/split_2r" > "$work/split_2r.out" 2>&1; then
        fail "split: the 2-rank run to step 10: $(tail -2 "$work/split_2r.out" | tr '\n' ' ')"
    else
        for b in 4 2; do
            name=split_1b$b
            cp -a "$work/split_2r" "$work/$name"
            if ! bin/train_gpt2 "${gflags[@]}" -b $b -d 128 -x 20 -n 5 -y 1 -o "$work/$name" > "$work/$name.out" 2>&1; then
                fail "split: the 2 x -b 2 checkpoint resumed as 1 x -b $b: $(tail -2 "$work/$name.out" | tr '\n' ' ')"
            elif ! grep -q "resum.* step 10" "$work/$name.out"; then
                fail "split: 1 x -b $b did not say it resumed at step 10: $(grep -m2 -i resum "$work/$name.out" | tr '\n' ' ')"
            else
                worst=$(max_trl_diff "$work/split_ref" "$work/$name")
                if [ "$worst" != missing ] && awk -v w="$worst" 'BEGIN { exit !(w <= 1e-5) }'; then
                    echo "ok   the 2 x -b 2 checkpoint of step 10 resumed as 1 x -b $b (-d 128): max loss difference $worst against the uninterrupted 1 x -b 4 run (tol 1e-5)"
                else
                    fail "split: 1 x -b $b: max loss difference $worst against the uninterrupted run (tol 1e-5)"
                fi
            fi
        done
    fi
fi
echo "$fails failed"
[ $fails -eq 0 ]
