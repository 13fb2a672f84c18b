#!/usr/bin/env bash
# CUDA graphs in the GPU trainers (-cg 1, llmc/cuda/step_graph.cuh) under
# the CUDA emulator (build/emu: the captured launches are recorded and replayed
# by dev/cuda/emu/emu_graph.cpp): a logic check, not a device run. Graph
# replay must equal eager execution bit for bit, so every check is cmp.
#   1. train_gpt2fp32cu and train_gpt2cu, 3 steps of 2 micro-steps (-d 64),
#      -cg 1 against -cg 0: the checkpoints of steps 2 and 3 (model and
#      state) identical, main.log identical, the step lines identical once
#      their timings (ms, tok/s, MFU) are masked; one capture, 4 launches
#      (the first step eager);
#   2. per-step randomness replayed: residual dropout (-rd 0.1, fp32) and
#      drop-path (-dp 0.2, bf16), -cg 1 == -cg 0;
#   3. the attention kinds that go through the libraries: -at cublas (fp32:
#      batched cuBLAS) and -at cudnn (bf16: the cuDNN shim), -cg 1 == -cg 0;
#   4. resume with -cg 1 from the step-2 checkpoint: step 3 identical to the
#      uninterrupted run (fp32; bf16 in 6);
#   5. negative control: FOLDNORM_GRAPH_STALE_DROPOUT=1 puts the capture's
#      dropout keys back before every launch (as if the graph had taken them
#      by value): the step-2 checkpoint then differs from -cg 0's, so the
#      equality checked above can fail;
#   6. train_vitfp32cu and train_vitcu (ViT, Fashion-MNIST, 4 steps): -cg 1 ==
#      -cg 0 (checkpoints of steps 2 and 4, main.log, step lines), in bf16
#      with drop-path and the EMA (-dp 0.2 -ema 0.9); a bf16 -cg 1 run resumed
#      at step 2 ends on the same step-4 files.
# The emulator's own graph checks (replay == eager on a small sequence,
# arguments by value, the calls a capture forbids) are in cuda_emu.
# cores: 1
# sanitized: skip the emulated programs and emu_graph.cpp run under the sanitizers in cuda_emu and cuda_emu_features (their trainers use -cg 1 by default)
set -uo pipefail
cd "$(dirname "$0")/../.."
. test/suite_outcome.sh
EMU=${EMU_DIR:-build/emu}
work=${1:-$(mktemp -d)}/cuda_graph_emu
rm -rf "$work"; mkdir -p "$work"
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
for b in "$EMU/train_gpt2fp32cu" "$EMU/train_gpt2cu" bin/text_to_shard; do
    [ -x "$b" ] || { skip_part "$b not built (make emu; make text_to_shard)"; suite_exit 0; }
done
export OMP_NUM_THREADS=1 EMU_RACECHECK=0 # races: cuda_emu (the same kernels)

# data: this repository's C sources, one token per byte
cat llmc/*/*.c llmc/*/*.h > "$work/text.txt"
bin/text_to_shard "$work/text.txt" "$work/src" 0.1 > /dev/null || { bad "text_to_shard"; suite_exit 1; }
flags=(-N cbwc -e d2c64h4v256t64 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin" -b 2 -t 16
       -d 64 -x 3 -n 1 -v 2 -m 1 -l 3e-3 -u 1 -q 0.1 -c 0.1 -sd 11)
last=3 # the last step's checkpoint (GPT-2 runs; ViT's: 4)

# run NAME PROGRAM FLAGS...: PROGRAM with the flags into $work/NAME (log NAME.out)
run() {
    local name=$1 prog=$2
    shift 2
    rm -rf "${work:?}/$name"
    "$prog" "${flags[@]}" "$@" -o "$work/$name" > "$work/$name.out" 2>&1 ||
        bad "$name: exit $?: $(tail -2 "$work/$name.out")"
}
same_checkpoint() { # DIR_A DIR_B STEP
    local s; s=$(printf %08d "$3")
    cmp -s "$work/$1/model_$s.bin" "$work/$2/model_$s.bin" && cmp -s "$work/$1/state_$s.bin" "$work/$2/state_$s.bin"
}
# the step, val and test lines with the timings masked
step_lines() {
    grep -E '^(step |val loss|epoch )' "$work/$1.out" |
        sed -E 's/\| [0-9.]+ ms \| [0-9.]+ (tok|images)\/s( \| MFU [0-9.]+%)?/| T/'
}
# equal EAGER GRAPH WHAT: both checkpoints, main.log (but its command line) and the
# masked step lines identical
equal() {
    if same_checkpoint "$1" "$2" 2 && same_checkpoint "$1" "$2" "$last" &&
        cmp -s <(grep -v '^#' "$work/$1/main.log") <(grep -v '^#' "$work/$2/main.log") &&
        diff <(step_lines "$1") <(step_lines "$2") > /dev/null && [ -n "$(step_lines "$2")" ]; then
        ok "$3: -cg 1 == -cg 0 bit for bit (checkpoints of steps 2 and $last, main.log, step lines)"
    elif ! same_checkpoint "$1" "$2" 2 || ! same_checkpoint "$1" "$2" "$last"; then
        bad "$3: -cg 1 and -cg 0 checkpoints differ"
    else bad "$3: -cg 1 differs from -cg 0: $(diff <(step_lines "$1") <(step_lines "$2") | head -4 | xargs)"; fi
}

for prec in fp32 bf16; do
    prog=$EMU/train_gpt2${prec/bf16/}cu
    [ "$prec" = fp32 ] && prog=$EMU/train_gpt2fp32cu
    # 1
    run "eager_$prec" "$prog" -cg 0
    run "graph_$prec" "$prog" -cg 1
    equal "eager_$prec" "graph_$prec" "$prec, 3 steps x 2 micro-steps"
    grep -q '^CUDA graphs: on' "$work/graph_$prec.out" && grep -q '^CUDA graphs: off (-cg 0)' "$work/eager_$prec.out" ||
        bad "$prec: the start-up line does not say whether graphs are on"
    line=$(grep -E '^CUDA graphs: [0-9]+ captured' "$work/graph_$prec.out")
    [[ "$line" =~ ^CUDA\ graphs:\ 1\ captured\ \([0-9]+\ nodes\ each\),\ 4\ launched$ ]] &&
        ok "$prec: $line (steps 2-3 x 2 micro-steps; the first step eager)" ||
        bad "$prec: expected 1 capture and 4 launches, got '$line'"
    [ "$prec" = fp32 ] || continue
    # 4
    mkdir -p "$work/resumed_$prec"
    cp "$work/graph_$prec/model_00000002.bin" "$work/graph_$prec/state_00000002.bin" "$work/resumed_$prec/"
    "$prog" "${flags[@]}" -cg 1 -y 1 -o "$work/resumed_$prec" > "$work/resumed_$prec.out" 2>&1 ||
        bad "$prec resume: $(tail -2 "$work/resumed_$prec.out")"
    same_checkpoint "graph_$prec" "resumed_$prec" 3 && ok "$prec: -cg 1 resumed at step 2: step 3 bit-exact" ||
        bad "$prec: -cg 1 resume differs from the uninterrupted run"
done

# 2
run eager_dropout "$EMU/train_gpt2fp32cu" -cg 0 -rd 0.1
run graph_dropout "$EMU/train_gpt2fp32cu" -cg 1 -rd 0.1
equal eager_dropout graph_dropout "fp32 residual dropout -rd 0.1 (a new mask draw every micro-step)"
run eager_droppath "$EMU/train_gpt2cu" -cg 0 -dp 0.2
run graph_droppath "$EMU/train_gpt2cu" -cg 1 -dp 0.2
equal eager_droppath graph_droppath "bf16 drop-path -dp 0.2 (new scales every micro-step)"

# 3
run eager_cublas "$EMU/train_gpt2fp32cu" -cg 0 -at cublas
run graph_cublas "$EMU/train_gpt2fp32cu" -cg 1 -at cublas
equal eager_cublas graph_cublas "fp32 -at cublas (batched cuBLAS captured)"
run eager_cudnn "$EMU/train_gpt2cu" -cg 0 -at cudnn # the emulator's cuDNN shim: always built
run graph_cudnn "$EMU/train_gpt2cu" -cg 1 -at cudnn
equal eager_cudnn graph_cudnn "bf16 -at cudnn (cuDNN graph executes captured)"

# 5
FOLDNORM_GRAPH_STALE_DROPOUT=1 run stale_dropout "$EMU/train_gpt2fp32cu" -cg 1 -rd 0.1
if same_checkpoint eager_dropout stale_dropout 2; then
    bad "negative control: stale dropout keys went unseen (the equality check cannot fail)"
else ok "negative control: the capture's dropout keys replayed (stale) make step 2 differ from -cg 0"; fi

# 6
fmnist=/usr/share/datasets/fashion-mnist
if [ ! -x "$EMU/train_vitfp32cu" ] || [ ! -x "$EMU/train_vitcu" ] || [ ! -d "$fmnist" ]; then
    skip_part "ViT: build/emu/train_vit*cu or $fmnist missing (make emu; make deps)"
    suite_exit $fails
fi
flags=(-i "$fmnist" -C 24 -L 2 -H 3 -P 7 -b 8 -x 4 -nt 32 -ne 16 -pe 1 -u 2 -n 2 -sd 11)
last=4
run vit_eager_fp32 "$EMU/train_vitfp32cu" -cg 0
run vit_graph_fp32 "$EMU/train_vitfp32cu" -cg 1
equal vit_eager_fp32 vit_graph_fp32 "ViT fp32"
run vit_eager_bf16 "$EMU/train_vitcu" -cg 0 -dp 0.2 -ema 0.9
run vit_graph_bf16 "$EMU/train_vitcu" -cg 1 -dp 0.2 -ema 0.9
equal vit_eager_bf16 vit_graph_bf16 "ViT bf16 -dp 0.2 -ema 0.9"
grep -qE '^CUDA graphs: 1 captured \([0-9]+ nodes each\), 3 launched' "$work/vit_graph_bf16.out" ||
    bad "ViT bf16: expected 1 capture and 3 launches: $(grep -E '^CUDA graphs' "$work/vit_graph_bf16.out" | xargs)"
mkdir -p "$work/vit_resumed"
cp "$work/vit_graph_bf16/model_00000002.bin" "$work/vit_graph_bf16/state_00000002.bin" "$work/vit_resumed/"
"$EMU/train_vitcu" "${flags[@]}" -cg 1 -dp 0.2 -ema 0.9 -y 1 -o "$work/vit_resumed" > "$work/vit_resumed.out" 2>&1 ||
    bad "ViT resume: $(tail -2 "$work/vit_resumed.out")"
same_checkpoint vit_graph_bf16 vit_resumed 4 && ok "ViT bf16 -cg 1 resumed at step 2: step 4 bit-exact" ||
    bad "ViT bf16 -cg 1 resume differs from the uninterrupted run"

suite_exit $fails
