#!/usr/bin/env bash
# -fe (GELU, its gradient and the bias gradients in cuBLASLt's GEMM
# epilogues) and -ga (timed, recorded cuBLASLt algorithms) under the CUDA
# emulator: a logic check, not a device run (the emulated cuBLASLt computes
# each epilogue as cuBLASLt documents it, checked against the CPU kernels in
# dev/cuda/matmul.cu; what a device's cuBLASLt rounds is not emulated).
#   1. train_gpt2fp32cu, 4 steps at -fe 1 and -fe 0: every step loss within
#      2e-5 (the tolerance cuda_emu_features holds the fp32 GPU to against
#      the CPU trainer: the fused epilogue rounds the GELU gradient once
#      where the kernels round twice, and sums the bias gradients in another
#      order, fp32 differences of the same size as the GPU's against the
#      CPU's; not bit-identical, so no bit claim), -fe 1 within 2e-5 of
#      bin/train_gpt2 on the same flags; control: lr 1% higher moves a step
#      loss by more than 2e-5 (measured 1.4e-3 at step 2, 70x);
#   2. train_gpt2cu (bf16) the same at 1e-2 (measured 5e-4: the epilogue
#      rounds GELU(fp32 pre-activation), the kernel GELU(bf16 fch)); control:
#      lr 25% higher moves a step loss by more than 1e-2;
#   3. train_vitfp32cu (the same transformer_block.cuh), -fe 1 vs -fe 0 at 2e-5;
#   4. -ga 1: with FOLDNORM_MATMUL_ALGO_FORCE=2 every plan takes candidate 2
#      of the emulated heuristic's 4 and the run folder records one line a
#      plan; resumed from the step-2 checkpoint at -ga 1 every plan takes the
#      recorded algorithm and the step-4 model and state are bit-exact; a
#      record edited to candidate 1 is applied (each plan "1 of 4 |
#      recorded"); refused with the reason: -ga 0 resuming a recorded run, an
#      algorithm the heuristic does not offer, a malformed line, -ga 1
#      resuming a run started at -ga 0.
# cores: 1
# sanitized: skip the emulated trainers run under the sanitizers in cuda_emu and cuda_emu_features (-fe 1 is their default); -ga's file handling is plain C
set -uo pipefail
cd "$(dirname "$0")/../.."
. test/suite_outcome.sh
work=${1:-$(mktemp -d)}/cuda_fusion_emu
rm -rf "$work"; mkdir -p "$work"
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
s=$(( seed % 1000 + 1 ))
echo "cuda_fusion_emu: seed $seed (emulated: a logic check, not a device run)"
E=build/emu
export OMP_NUM_THREADS=1 EMU_RACECHECK=0 DEV_CUDA_CHECK_ONLY=1
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
make -s $E/train_gpt2fp32cu $E/train_gpt2cu $E/train_vitfp32cu bin/train_gpt2 bin/text_to_shard \
    > "$work/build.log" 2>&1 || { tail -30 "$work/build.log"; echo "FAIL make"; exit 1; }

cat llmc/*/*.c llmc/*/*.h > "$work/text.txt"
bin/text_to_shard "$work/text.txt" "$work/src" 0.1 > /dev/null || { bad "text_to_shard"; suite_exit 1; }
flags=(-N cbwc -e d2c64h4v256t64 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin" -b 2 -t 16
       -x 4 -v 2 -m 1 -u 1 -q 0.1 -c 0.1 -sd $s)
losses() { grep -oE '^step +[0-9]+/[0-9]+ \| loss [0-9.]+' "$1" | awk '{print $NF}'; }
# the largest step-loss difference of two logs (the same number of steps), "x" if not
max_diff() {
    paste <(losses "$1") <(losses "$2") | awk 'NF != 2 { bad = 1 } { d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d }
        END { if (bad || NR == 0) print "x"; else printf "%.3g\n", m }'
}
within() { awk -v d="$1" -v t="$2" 'BEGIN { exit !(d != "x" && d + 0 <= t + 0) }'; }
beyond() { awk -v d="$1" -v t="$2" 'BEGIN { exit !(d != "x" && d + 0 > t + 0) }'; }

# 1, 2
# pair PROGRAM TOL CONTROL_LR NAME: -fe 1 vs -fe 0 within TOL, the lr control beyond it
pair() {
    local prog=$1 tol=$2 lr2=$3 name=$4 d dc
    "$E/$prog" "${flags[@]}" -l 3e-3 -fe 1 > "$work/$name.fe1" 2>&1 || { bad "$prog -fe 1: $(tail -2 "$work/$name.fe1")"; return; }
    "$E/$prog" "${flags[@]}" -l 3e-3 -fe 0 > "$work/$name.fe0" 2>&1 || { bad "$prog -fe 0: $(tail -2 "$work/$name.fe0")"; return; }
    "$E/$prog" "${flags[@]}" -l "$lr2" -fe 1 > "$work/$name.control" 2>&1 || { bad "$prog control: $(tail -2 "$work/$name.control")"; return; }
    d=$(max_diff "$work/$name.fe1" "$work/$name.fe0"); dc=$(max_diff "$work/$name.fe1" "$work/$name.control")
    if within "$d" "$tol" && beyond "$dc" "$tol"; then
        ok "$prog: -fe 1 vs -fe 0 step losses within $d (tol $tol); control -l $lr2 moves them $dc"
    else bad "$prog: -fe 1 vs -fe 0 $d, control $dc (tol $tol): $(losses "$work/$name.fe1" | xargs) vs $(losses "$work/$name.fe0" | xargs)"; fi
}
pair train_gpt2fp32cu 2e-5 3.03e-3 fp32
pair train_gpt2cu 1e-2 3.75e-3 bf16
bin/train_gpt2 "${flags[@]}" -l 3e-3 > "$work/cpu.out" 2>&1 || bad "train_gpt2: $(tail -2 "$work/cpu.out")"
d=$(max_diff "$work/fp32.fe1" "$work/cpu.out")
if within "$d" 2e-5; then ok "train_gpt2fp32cu -fe 1 vs the CPU trainer: step losses within $d (tol 2e-5)"
else bad "train_gpt2fp32cu -fe 1 vs the CPU: $d: $(losses "$work/fp32.fe1" | xargs) vs $(losses "$work/cpu.out" | xargs)"; fi

# 3
fmnist=/usr/share/datasets/fashion-mnist
if [ -d "$fmnist" ]; then
    vit=(-i "$fmnist" -C 24 -L 2 -H 3 -P 7 -b 8 -x 3 -nt 24 -ne 8 -pe 1 -u 2 -sd $((s + 3)))
    for fe in 0 1; do "$E/train_vitfp32cu" "${vit[@]}" -fe $fe > "$work/vit.fe$fe" 2>&1 || bad "train_vitfp32cu -fe $fe: $(tail -2 "$work/vit.fe$fe")"; done
    d=$(paste <(grep -oE 'loss[ :=]+[0-9.]+' "$work/vit.fe1" | grep -oE '[0-9.]+$') \
              <(grep -oE 'loss[ :=]+[0-9.]+' "$work/vit.fe0" | grep -oE '[0-9.]+$') |
        awk 'NF != 2 { bad = 1 } { d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d } END { if (bad || NR < 3) print "x"; else printf "%.3g\n", m }')
    if within "$d" 2e-5; then ok "train_vitfp32cu: -fe 1 vs -fe 0 losses within $d (tol 2e-5)"
    else bad "train_vitfp32cu: -fe 1 vs -fe 0: $d"; fi
else
    skip_part "train_vitfp32cu: $fmnist missing (the Debian package dataset-fashion-mnist)"
fi

# 4
gpu=$E/train_gpt2fp32cu
ga=("${flags[@]}" -l 3e-3 -n 2 -v 0)
table() { grep -E '^matmul algos \| [0-9]' "$1"; }
FOLDNORM_MATMUL_ALGO_FORCE=2 "$gpu" "${ga[@]}" -ga 1 -o "$work/ga" > "$work/ga.out" 2>&1 || bad "-ga 1 run: $(tail -2 "$work/ga.out")"
plans=$(table "$work/ga.out" | wc -l)
lines=$(grep -c '^plan ' "$work/ga/matmul_algos.txt" 2>/dev/null)
if [ "$plans" -ge 8 ] && [ "$(table "$work/ga.out" | grep -c '| 2 of 4 | [0-9.]* | FOLDNORM_MATMUL_ALGO_FORCE$')" = "$plans" ] &&
   [ "$lines" = "$plans" ]; then ok "-ga 1: $plans plans timed, candidate 2 of 4 forced, $lines lines recorded"
else bad "-ga 1: $plans plans printed, $lines recorded: $(table "$work/ga.out" | head -3)"; fi
# resume RECORD_EDIT DIR: the step-2 checkpoint and the record (sed-edited) into DIR
resume_dir() {
    mkdir -p "$2"
    cp "$work/ga/model_00000002.bin" "$work/ga/state_00000002.bin" "$2/"
    sed "$1" "$work/ga/matmul_algos.txt" > "$2/matmul_algos.txt"
}
resume_dir 's/x/x/' "$work/ga_resumed"
"$gpu" "${ga[@]}" -ga 1 -o "$work/ga_resumed" -y 1 > "$work/ga_resumed.out" 2>&1 || bad "-ga 1 resume: $(tail -2 "$work/ga_resumed.out")"
if [ "$(table "$work/ga_resumed.out" | grep -c '| 2 of 4 | [0-9.]* | recorded$')" = "$plans" ] &&
   cmp -s "$work/ga/model_00000004.bin" "$work/ga_resumed/model_00000004.bin" &&
   cmp -s "$work/ga/state_00000004.bin" "$work/ga_resumed/state_00000004.bin"
then ok "-ga 1 resume at step 2: every plan takes its recorded algorithm, step-4 model and state bit-exact"
else bad "-ga 1 resume: $(table "$work/ga_resumed.out" | head -2) $(tail -1 "$work/ga_resumed.out")"; fi
# the emulated candidates' ids sit in the algorithm's word 2 (W2): 0xa160 + k
resume_dir 's/ a162 / a161 /' "$work/ga_other"
"$gpu" "${ga[@]}" -ga 1 -o "$work/ga_other" -y 1 > "$work/ga_other.out" 2>&1 || bad "-ga 1 edited record: $(tail -2 "$work/ga_other.out")"
[ "$(table "$work/ga_other.out" | grep -c '| 1 of 4 | [0-9.]* | recorded$')" = "$plans" ] &&
    ok "-ga 1: a record edited to candidate 1 is applied to all $plans plans" ||
    bad "-ga 1 edited record not applied: $(table "$work/ga_other.out" | head -2)"
# refused RUN_DIR_EDIT GA PATTERN WHAT
refused() {
    local dir=$work/ga_refused_$2_$RANDOM
    if [ "$1" = none ]; then mkdir -p "$dir"; cp "$work/ga/model_00000002.bin" "$work/ga/state_00000002.bin" "$dir/"
    else resume_dir "$1" "$dir"; fi
    if "$gpu" "${ga[@]}" -ga "$2" -o "$dir" -y 1 > "$dir.out" 2>&1; then bad "$4: accepted"
    elif grep -qF -- "$3" "$dir.out"; then ok "refused: $4 ($(grep -m1 -F -- "$3" "$dir.out" | cut -c1-90)...)"
    else bad "$4: $(tail -2 "$dir.out")"; fi
}
refused 's/x/x/' 0 "resuming at -ga 0 would take the heuristic's first" "-ga 0 resuming a -ga 1 run"
refused '2s/ a162 / a16f /' 1 "is not among this cuBLASLt's 4 candidates" "a recorded algorithm the heuristic does not offer"
refused '3s/^plan [0-9]*/plan x/' 1 "matmul_algos.txt line 3: not 'plan" "a malformed record line"
refused none 1 "the run started at -ga 0" "-ga 1 resuming a run started at -ga 0"
suite_exit $fails
