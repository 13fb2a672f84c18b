#!/usr/bin/env bash
# -r 0|1|2, activation recompute in the backward (llm.c's flag;
# llmc/cuda/transformer_block.cuh), under the CUDA emulator: a logic check,
# not a device run (no GPU is lent here; the memory it frees is counted from
# the allocations, not measured on a device).
#   1. test_gpt2cu / test_gpt2fp32cu --recompute 1 on fresh PyTorch reference
#      models (2 and 3 layers): in ln, rms and cbwc, with the epilogues
#      separate (-fe 0) the loss and every gradient at -r 1 and -r 2 equal
#      -r 0's bit for bit; fused (-fe 1) -r 2 equals -r 1 bit for bit and -r 1
#      is within the gradient tolerance of -r 0 (the GEMM epilogue's GELU vs
#      the recompute kernel's: test/test_gpt2.cu); and the blocks' activation
#      bytes equal the test's formula (the 3-layer one at the odd shape C=48,
#      V=301);
#   2. train_gpt2cu / train_gpt2fp32cu and train_vitcu / train_vitfp32cu, 3
#      steps at -fe 0 -r 0, 1, 2: the start-up line's activation bytes equal
#      the formula written out below (docs/cuda.md), and every printed loss is
#      the same across the levels; train_vitcu -e swin -r 1 is refused.
# cores: 1
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/recompute
rm -rf "$work"; mkdir -p "$work"
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
s=$(( seed % 1000000 ))
echo "recompute: seed $seed (emulated: a logic check, not a device run)"
PY=${PYTHON:-/usr/bin/python3}
E=build/emu
export DEV_CUDA_CHECK_ONLY=1 OMP_NUM_THREADS=1
fails=0
. test/suite_outcome.sh
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
targets="$E/test_gpt2cu $E/test_gpt2fp32cu $E/train_gpt2cu $E/train_gpt2fp32cu $E/train_vitcu $E/train_vitfp32cu"
make -s $targets bin/text_to_shard > "$work/build.log" 2>&1 || { tail -30 "$work/build.log"; echo "FAIL make"; exit 1; }

# 1. the test programs, bit for bit
small="--B 2 --T 16 --steps 1"
odd="--L 3 --C 48 --NH 6 --V 301 --Vp 384 --maxT 40 --B 2 --T 24 --init gpt2 --steps 1"
for shape in small odd; do
    m=$(( (s + ${#shape} * 13) % 1000000 ))
    $PY dev/reference/gpt2.py --mode ln --seed $m --model "$work/$shape.bin" --state "$work/${shape}_state.bin" \
        ${!shape} > "$work/ref_$shape.log" 2>&1 || { bad "reference $shape"; tail -5 "$work/ref_$shape.log"; continue; }
    for b in test_gpt2fp32cu test_gpt2cu; do
        if "$E/$b" "$work/$shape.bin" "$work/${shape}_state.bin" --recompute 1 > "$work/$b.$shape.log" 2>&1 &&
           [ "$(grep -c '^recompute .* ok$' "$work/$b.$shape.log")" = 30 ]; then
            ok "$b $shape (seed $m): -fe 0: -r 1, 2 == -r 0 bit for bit; -fe 1: -r 2 == -r 1 bit for bit, -r 1 ~ -r 0; in ln, rms, cbwc; activation bytes as the formula"
        else
            bad "$b $shape"; grep -E 'FAIL|error' "$work/$b.$shape.log" | head -10 | sed 's/^/     /'
        fi
    done
done

# the blocks' activation bytes at -r R: X bytes a floatX, L layers, BT rows,
# width C, MLP width H: floatX qkv (3C), atty, residual2, residual3, fch (H)
# over L layers, ln1 and ln2 over L (1 at -r 2), fch_gelu over L (1 at -r 1,
# 2); fp32 mean and rstd of ln1 and ln2 over L
formula() { # X L BT C H R
    local X=$1 L=$2 BT=$3 C=$4 H=$5 R=$6 Ln Lg
    Ln=$L; Lg=$L; [ "$R" -ge 1 ] && Lg=1; [ "$R" -ge 2 ] && Ln=1
    echo $(( X * BT * (L * (6 * C + H) + Ln * 2 * C + Lg * H) + 16 * L * BT ))
}
reported() { grep -oE -- '-r [0-9]: the blocks. activations take [0-9]+ bytes' "$1" | grep -oE '[0-9]+ bytes' | cut -d' ' -f1; }

# 2. the trainers
cat llmc/*/*.c llmc/*/*.h > "$work/text.txt"
bin/text_to_shard "$work/text.txt" "$work/src" 0.1 > /dev/null || bad "text_to_shard"
gpt_flags=(-e d2c64h4v256t64 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin" -b 2 -t 32 -x 3 -v 3 -m 1
           -l 3e-3 -sd $(( s % 1000 + 1 )))
fmnist=/usr/share/datasets/fashion-mnist
vit_flags=(-i "$fmnist" -C 24 -L 2 -H 3 -P 7 -b 8 -x 3 -nt 24 -ne 8 -pe 1 -u 2 -sd $(( s % 1000 + 3 )))
# trainer X BT C H FLAGS...: 3 runs, the byte lines against the formula and the losses alike
trainer() {
    local b=$1 X=$2 BT=$3 C=$4 H=$5; shift 5
    local r want got losses=() okay=1
    for r in 0 1 2; do
        if ! "$E/$b" "$@" -fe 0 -r $r > "$work/$b.r$r.log" 2>&1; then
            bad "$b -r $r"; tail -5 "$work/$b.r$r.log" | sed 's/^/     /'; return
        fi
        want=$(formula "$X" 2 "$BT" "$C" "$H" $r); got=$(reported "$work/$b.r$r.log")
        if [ "$got" != "$want" ]; then bad "$b -r $r: the start-up line says '$got' bytes, the formula $want"; okay=0; fi
        # the losses, timings left out
        grep -oiE '(loss|accuracy)[ :=]+[0-9.]+' "$work/$b.r$r.log" > "$work/$b.r$r.losses"
        losses[$r]=$(wc -l < "$work/$b.r$r.losses")
    done
    [ "${losses[0]}" -ge 3 ] || { bad "$b: only ${losses[0]} loss values printed"; return; }
    for r in 1 2; do
        cmp -s "$work/$b.r0.losses" "$work/$b.r$r.losses" || { bad "$b -r $r: losses differ from -r 0's"; okay=0; }
    done
    [ $okay = 1 ] && ok "$b -fe 0 -r 0, 1, 2: activation bytes $(reported "$work/$b.r0.log" | tr '\n' ' ')-> $(reported "$work/$b.r2.log") as the formula, ${losses[0]} printed losses alike"
}
trainer train_gpt2fp32cu 4 64 64 256 -N cbwc "${gpt_flags[@]}"
trainer train_gpt2cu 2 64 64 256 -N ln "${gpt_flags[@]}"
if [ -d "$fmnist" ]; then
    # 28 x 28 images in 7 x 7 patches: 16 tokens and the class token
    trainer train_vitfp32cu 4 $((8 * 17)) 24 96 -N ln "${vit_flags[@]}"
    trainer train_vitcu 2 $((8 * 17)) 24 96 -N cbwc "${vit_flags[@]}"
    if "$E/train_vitfp32cu" -e swin "${vit_flags[@]}" -r 1 > "$work/swin.log" 2>&1; then
        bad "train_vitfp32cu -e swin -r 1: accepted"
    elif grep -q "activation recompute is ViT's and GPT-2's only" "$work/swin.log"; then
        ok "train_vitfp32cu -e swin -r 1 refused with the reason"
    else
        bad "train_vitfp32cu -e swin -r 1: $(tail -2 "$work/swin.log")"
    fi
else
    skip_part "train_vitcu: $fmnist missing (the Debian package dataset-fashion-mnist)"
fi
suite_exit $fails
