#!/usr/bin/env bash
# The CUDA programs under emulation (issue 12): train_gpt2.cu, test/test_gpt2.cu
# and dev/cuda/*.cu built with g++ against dev/cuda/emu (make emu, no nvcc)
# and run on the CPU -- emulated: a logic check, not a device run (races,
# the memory model, fast-math rounding, library algorithm availability,
# NCCL transport and speed are not covered; docs/cuda.md).
#   1. test_gpt2fp32cu / test_gpt2cu vs fresh PyTorch reference states: all
#      three modes, two shapes; ln == cbwc with the rms control; the curve vs
#      the CPU trainer; a state with SFT-masked targets; the threads of each
#      block also run in reverse order
#   2. every dev/cuda kernel check (DEV_CUDA_CHECK_ONLY=1: small shapes, no timings)
#   3. train_gpt2cu / train_gpt2fp32cu: a few steps with -o, gradient
#      accumulation, forward-only passes, two ranks as threads over the
#      emulated NCCL, resume where train_gpt2.cu has it
#   4. the mutation check: a removed __syncthreads and a broken index must fail
#      the test; and first (0) the emulator's own checks must fire (emu_selftest)
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/cuda_emu
rm -rf "$work"; mkdir -p "$work"
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
s=$(( seed % 1000000 ))
echo "cuda_emu: seed $seed (emulated: a logic check, not a device run)"
PY=${PYTHON:-/usr/bin/python3}
E=build/emu
# one OpenMP thread: the emulation is serial, and the CPU model beside it is tiny
export DEV_CUDA_CHECK_ONLY=1 OMP_NUM_THREADS=1
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
# a no-op after `make test` (same SAN setting: make passes it down)
make -s emu > "$work/build.log" 2>&1 || { tail -30 "$work/build.log"; echo "FAIL make emu"; exit 1; }

# 0. the emulator's own checks fire: CASE and the message it must abort with
selftest() {
    local case=$1 pattern=$2 out
    out=$("$E/emu_selftest" "$case" 2>&1)
    if [ $? -ne 0 ] && grep -q -- "$pattern" <<< "$out"; then ok "emulator catches: $case"; else
        bad "emulator missed $case: $out"; fi
}
"$E/emu_selftest" ok > "$work/selftest.log" 2>&1 && ok "emulator: shared memory, shuffles, barriers" ||
    bad "emulator selftest ok: $(cat "$work/selftest.log")"
selftest divergent "divergent __syncthreads"
selftest exited-lane "shuffle/vote with an exited lane"
selftest nan-shared "never written reads NaN"
selftest block-size "exceeds the device's 1024 threads"
selftest grid-y "exceeds the device's limits"
selftest shared-size "bytes of dynamic shared memory"
selftest memcpy-overrun "overrun the allocation"
selftest gemm-ld "leading dimension 4 < rows 8"
selftest gemm-range "gemm B: 288 bytes"
selftest lt-align "chosen for 256-byte alignment"

# 1. reference states. small: 2 layers C=64 (B=2 T=16); odd: 3 layers, 6 heads,
#    hs=8, V not a multiple of 128, T < maxT, gpt2 init
small="--B 2 --T 16 --steps 3"
odd="--L 3 --C 48 --NH 6 --V 301 --Vp 384 --maxT 40 --B 2 --T 24 --init gpt2 --steps 3 --lr 3e-3"
for mode in ln rms cbwc; do
    for shape in small odd; do
        m=$(( (s + ${#mode} * 7 + ${#shape} * 13) % 1000000 ))
        tag=${mode}_$shape
        $PY dev/reference/gpt2.py --mode $mode --seed $m --model "$work/$tag.bin" \
            --state "$work/${tag}_state.bin" ${!shape} > "$work/ref_$tag.log" 2>&1 ||
            { bad "reference $tag"; tail -5 "$work/ref_$tag.log"; continue; }
        extra=()
        [ $shape = small ] && extra=(--curve 5 --seed $m)
        [ $shape = small ] && [ $mode = ln ] && extra+=(--equivalence 8) # the rms control needs steps to diverge in bf16
        for b in test_gpt2fp32cu test_gpt2cu; do
            t0=$SECONDS
            if "$E/$b" "$work/$tag.bin" "$work/${tag}_state.bin" "${extra[@]}" > "$work/$b.$tag.log" 2>&1; then
                ok "$b $tag: logits, loss, gradients, steps${extra[*]:+, ${extra[*]}} ($((SECONDS - t0)) s)"
            else
                bad "$b $tag"; grep -E 'FAIL|error' "$work/$b.$tag.log" | head -20 | sed 's/^/     /'
            fi
        done
    done
done

# SFT masks: a random prefix of each row's targets is -1 (the loss and its gradient skip them)
m=$(( (s + 5) % 1000000 ))
if $PY dev/reference/gpt2.py --mode cbwc --seed $m --model "$work/mask.bin" --state "$work/mask_state.bin" \
        $small --mask > "$work/ref_mask.log" 2>&1; then
    for b in test_gpt2fp32cu test_gpt2cu; do
        if "$E/$b" "$work/mask.bin" "$work/mask_state.bin" > "$work/$b.mask.log" 2>&1; then
            ok "$b cbwc with masked targets"
        else
            bad "$b masked targets"; grep -E 'FAIL|error' "$work/$b.mask.log" | head -10 | sed 's/^/     /'
        fi
    done
else
    bad "reference with --mask"; tail -5 "$work/ref_mask.log"
fi

# threads run last to first (a missing barrier where a thread reads what a
# later thread writes shows only in this order; in thread order, the other way)
for tag in ln_small cbwc_odd; do
    if EMU_FIBER_ORDER=reverse "$E/test_gpt2fp32cu" "$work/$tag.bin" "$work/${tag}_state.bin" \
            > "$work/reverse.$tag.log" 2>&1; then
        ok "test_gpt2fp32cu $tag with the threads of each block run in reverse order"
    else
        bad "test_gpt2fp32cu $tag, reverse order"; grep -E 'FAIL|error' "$work/reverse.$tag.log" | head -10 | sed 's/^/     /'
    fi
done

# 2. dev/cuda kernel checks against their CPU references
for prog in "$E"/dev/cuda/*_fp32 "$E"/dev/cuda/*_bf16; do
    name=$(basename "$prog")
    args=()
    [[ $name == norm_* ]] && args=(256 96 40 64) # rows over several warps and blocks; C not a multiple of 256
    if "$prog" "${args[@]}" > "$work/dev_$name.log" 2>&1 && tail -1 "$work/dev_$name.log" | grep -q '^OK' &&
       EMU_FIBER_ORDER=reverse "$prog" "${args[@]}" > "$work/dev_$name.reverse.log" 2>&1 &&
       tail -1 "$work/dev_$name.reverse.log" | grep -q '^OK'; then
        ok "dev/cuda $name (threads in both orders)"
    else
        bad "dev/cuda $name"; grep -E 'FAIL|error' "$work/dev_$name.log" | head -10 | sed 's/^/     /'
    fi
done

# 3. the trainer: -o, two ranks as threads, resume
cat llmc/*.c llmc/*.h > "$work/text.txt"
[ -x bin/text_to_shard ] || make -s text_to_shard > /dev/null
bin/text_to_shard "$work/text.txt" "$work/src" 0.1 > /dev/null || bad "text_to_shard"
train_flags=(-e d2c64h4v256t64 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin" -b 2 -t 32 -x 4
             -v 2 -m 2 -l 3e-3 -sd $(( s % 1000 + 1 )))
for b in train_gpt2fp32cu train_gpt2cu; do
    for mode in ln cbwc; do
        out=$work/$b.$mode
        if "$E/$b" -N $mode "${train_flags[@]}" -o "$out" > "$out.log" 2>&1 && [ -s "$out/model_00000004.bin" ] &&
           grep -qE '^step +4/4 \| loss [0-9.]+' "$out.log"; then
            ok "$b -N $mode: 4 steps, $(grep -cE '^val loss [0-9.]+' "$out.log") evaluations, model written"
        else
            bad "$b -N $mode"; tail -5 "$out.log" | sed 's/^/     /'
        fi
    done
done
# gradient accumulation (-d = 2 B T) and the forward-only benchmark (one layer's attention buffer)
if "$E/train_gpt2fp32cu" -N cbwc "${train_flags[@]}" -d 128 -x 2 > "$work/accum.log" 2>&1 &&
   grep -q 'grad_accum=2' "$work/accum.log" && grep -qE '^step +2/2 \| loss [0-9.]+' "$work/accum.log"; then
    ok "train_gpt2fp32cu with gradient accumulation (-d 128 = 2 x B*T)"
else
    bad "gradient accumulation"; tail -5 "$work/accum.log" | sed 's/^/     /'
fi
for mode in ln cbwc; do
    if "$E/train_gpt2cu" -N $mode -e d2c64h4v256t64 -b 2 -t 32 -inf 2 > "$work/inf_$mode.log" 2>&1 &&
       grep -q "^inference | mode $mode" "$work/inf_$mode.log"; then
        ok "train_gpt2cu -inf 2 -N $mode (forward only)"
    else
        bad "train_gpt2cu -inf -N $mode"; tail -5 "$work/inf_$mode.log" | sed 's/^/     /'
    fi
done
# data parallel: two ranks as threads of one process, the NCCL unique id through -pf
if EMU_RANKS=2 "$E/train_gpt2fp32cu" -N cbwc "${train_flags[@]}" -pf "$work/nccl.id" > "$work/ranks2.log" 2>&1 &&
   grep -q 'x 2 GPU' "$work/ranks2.log" && [ ! -e "$work/nccl.id" ]; then
    ok "train_gpt2fp32cu, 2 ranks as threads (emulated NCCL, ZeRO-1: the -z default)"
else
    bad "train_gpt2fp32cu, 2 ranks"; tail -5 "$work/ranks2.log" | sed 's/^/     /'
fi
# resume (bit-exact, CPU <-> GPU, ZeRO-1): test/suites/cuda_emu_features.sh

# 4. the harness bites: mutants of the kernels must fail the emulated test
if dev/cuda/emu/mutation_check.sh "$work/mutants" "$work/ln_small.bin" "$work/ln_small_state.bin" > "$work/mutants.log" 2>&1; then
    sed 's/^/     /' "$work/mutants.log"; ok "mutation check"
else
    cat "$work/mutants.log"; bad "mutation check"
fi
echo "$fails failed"
[ $fails -eq 0 ]
