#!/usr/bin/env bash
# train_gpt2 -mc FILE: llm.c's multiple-choice eval (its HellaSwag file
# format, llmc/gpt2/mc_eval.c). dev/reference/mc_eval.py writes eval files of
# random examples for a briefly trained model and scores them with the
# PyTorch reference GPT-2 as llm.c does (lowest mean completion loss), then:
#   - labels = PyTorch's answers: train_gpt2 reports accuracy 1 (stdout and
#     main.log's s:0 eval:), so it picks PyTorch's completion in every example;
#   - labels = the next completion (the negative control): accuracy 0;
#   - 2 ranks under mpirun (each scores its share, the counts summed): 1 again;
#   - bad files (magic, truncation, a label past the completions, a token
#     outside the vocabulary, a wrong example count, a row longer than -t):
#     exit 1 with the file's name and the reason;
#   - train_gpt2fp32cu / train_gpt2cu -mc under the CUDA emulator (a logic
#     check, not a device run; llmc/cuda/gpt2_mc_eval.cuh), -b 2 so that an
#     example's 4 completions take two forwards: the CPU trainer's accuracy,
#     1 on the right labels and 0 on the wrong ones, in stdout and main.log
#     (bf16: within the fraction of examples the reference finds within 0.25
#     of a tie in mean loss, which bf16's rounding may swap).
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/mc_eval
rm -rf "$work"; mkdir -p "$work"
PY=${PYTHON:-/usr/bin/python3}
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
echo "mc_eval: seed $seed"
fails=0
. test/suite_outcome.sh
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
for b in bin/train_gpt2 bin/text_to_shard; do [ -x "$b" ] || make -s "${b#bin/}"; done
cat llmc/*/*.c > "$work/text.txt"
bin/text_to_shard "$work/text.txt" "$work/src" 0.1 > /dev/null || { bad "text_to_shard"; exit 1; }
data=(-i "$work/src_train_*.bin" -j "$work/src_val_*.bin")
bin/train_gpt2 -N ln -e d2c64h4v256t64 "${data[@]}" -b 4 -t 32 -x 30 -v 0 -l 3e-3 -sd $((seed % 100000)) \
    -o "$work/model" > "$work/model.out" 2>&1 || { bad "training the model: $(tail -2 "$work/model.out")"; exit 1; }
model=$work/model/model_00000030.bin
for labels in right wrong; do
    $PY dev/reference/mc_eval.py "$model" "$work/$labels.bin" --examples 40 --seed "$seed" --labels $labels \
        > "$work/$labels.ref" || bad "mc_eval.py --labels $labels"
    cat "$work/$labels.ref"
done
# the examples within 0.25 of a tie in mean loss, which a bf16 trainer may swap
# (seed 932323445: train_gpt2cu scored 39 of 40 where fp32 scored 40)
near=$(sed -n 's/^bf16 near ties: //p' "$work/right.ref")
# score RUN FILE [LAUNCHER...]: train_gpt2 -x 0 -mc FILE; prints main.log's accuracy
score() {
    local run=$1 file=$2; shift 2
    "$@" bin/train_gpt2 -e "$model" "${data[@]}" -b 2 -t 32 -x 0 -v 1 -m 1 -mc "$file" -o "$work/$run" \
        > "$work/$run.out" 2>&1 && grep -oE '^s:0 eval:[0-9.]+' "$work/$run/main.log" | cut -d: -f3
}
right=$(score right "$work/right.bin") wrong=$(score wrong "$work/wrong.bin")
[ "$right" = 1.000000 ] && grep -q '^multiple-choice accuracy 1.0000' "$work/right.out" &&
    ok "labels = PyTorch's answers: accuracy $right on 40 examples" || bad "labels = PyTorch's answers: accuracy '$right' (expected 1)"
[ "$wrong" = 0.000000 ] && ok "negative control, labels = the next completion: accuracy $wrong" ||
    bad "negative control: accuracy '$wrong' (expected 0)"
if command -v mpirun > /dev/null; then
    root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
    np2=$(ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} score np2 "$work/right.bin" mpirun "${root[@]}" --oversubscribe -np 2)
    [ "$np2" = 1.000000 ] && ok "2 ranks, each scoring its share: accuracy $np2" || bad "2 ranks: accuracy '$np2' (expected 1)"
else
    skip_part "2 ranks: no mpirun"
fi
# bad files: each a variant of right.bin
$PY - "$work/right.bin" "$work" <<'PY' || bad "making the bad files"
import struct, sys
src, out = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
def put(name, b):
    open(f"{out}/bad_{name}.bin", "wb").write(b)
def u16(b, index, value):  # the index-th uint16 after the header
    b = bytearray(b); struct.pack_into("<H", b, 1024 + 2 * index, value); return bytes(b)
put("magic", struct.pack("<i", 20240520) + data[4:])
put("truncated", data[:len(data) - 3])
put("label", u16(data, 3, 4))                    # example 0: label 4 of 4 completions
put("token", u16(data, 6, 256))                  # example 0: its context's first token, V = 256
put("count", data[:8] + struct.pack("<i", struct.unpack_from("<i", data, 8)[0] + 1) + data[12:])
PY
for name in magic truncated label token count; do
    out=$(bin/train_gpt2 -e "$model" "${data[@]}" -b 2 -t 32 -x 0 -v 1 -m 1 -mc "$work/bad_$name.bin" 2>&1)
    rc=$?
    [ $rc = 1 ] && echo "$out" | grep -q "bad_$name.bin: " && ok "bad file ($name): $(echo "$out" | grep -m1 "bad_$name.bin" | sed 's|.*/||')" ||
        bad "bad file ($name): exit $rc, $(echo "$out" | tail -1)"
done
out=$(bin/train_gpt2 -e "$model" "${data[@]}" -b 2 -t 8 -x 0 -v 1 -m 1 -mc "$work/right.bin" 2>&1)
[ $? = 1 ] && echo "$out" | grep -q 'more than -t 8' && ok "rows longer than -t refused: $(echo "$out" | grep -m1 'more than' | sed 's|.*/||')" ||
    bad "rows longer than -t: $(echo "$out" | tail -1)"
# the GPU trainer's -mc, emulated: the same accuracies as the CPU trainer's
if make -s build/emu/train_gpt2fp32cu build/emu/train_gpt2cu > "$work/emu_build.log" 2>&1; then
    for b in train_gpt2fp32cu train_gpt2cu; do
        for labels in right wrong; do
            run=$b.$labels
            DEV_CUDA_CHECK_ONLY=1 OMP_NUM_THREADS=1 build/emu/$b -e "$model" "${data[@]}" -b 2 -t 32 -x 0 -v 1 -m 1 \
                -mc "$work/$labels.bin" -o "$work/$run" > "$work/$run.out" 2>&1
            got=$(grep -oE '^s:0 eval:[0-9.]+' "$work/$run/main.log" 2>/dev/null | cut -d: -f3)
            want=${!labels}
            if [ $b = train_gpt2fp32cu ]; then
                [ -n "$got" ] && [ "$got" = "$want" ] && grep -q "^multiple-choice accuracy" "$work/$run.out" &&
                    ok "$b -mc ($labels labels, emulated): accuracy $got = the CPU trainer's" ||
                    bad "$b -mc ($labels labels): accuracy '$got', the CPU trainer's '$want' ($(tail -1 "$work/$run.out"))"
            else # bf16: only the ${near:-?} near ties may swap
                $PY -c "import sys; g, w, k = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
sys.exit(not abs(g - w) <= k / 40 + 1e-9)" "${got:-nan}" "$want" "${near:-0}" &&
                    grep -q "^multiple-choice accuracy" "$work/$run.out" &&
                    ok "$b -mc ($labels labels, emulated bf16): accuracy $got, the CPU trainer's $want, within the $near of 40 examples near a tie" ||
                    bad "$b -mc ($labels labels): accuracy '$got', the CPU trainer's '$want', more apart than the ${near:-?} near ties allow ($(tail -1 "$work/$run.out"))"
            fi
        done
    done
else
    skip_part "train_gpt2cu -mc: the emulated build failed ($(tail -1 "$work/emu_build.log"))"
fi
echo "$fails failed"
suite_exit $fails
