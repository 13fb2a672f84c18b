#!/usr/bin/env bash
# One call on a GPU machine: builds the CUDA programs, runs every GPU test,
# then the benchmarks; logs under OUTDIR, a short table last. Sized for one
# H200 well inside 8 minutes (each stage has its own timeout).
#   dev/gpu/check.sh OUTDIR [LLMC_DIR]
# LLMC_DIR: optional checkout of karpathy/llm.c (carried in, never committed):
# its train_gpt2cu is built without cuDNN and timed on the same data.
# Many logs: from a device call, tar OUTDIR into one file under $OUT.
# Env: CHECK_B (micro-batch of the d12 benchmarks, default 32), CHECK_STEPS (10).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: dev/gpu/check.sh OUTDIR [LLMC_DIR]}
llmc_dir=${2:-}
mkdir -p "$out"
out=$(cd "$out" && pwd)
B=${CHECK_B:-32}
STEPS=${CHECK_STEPS:-10}
PY=${PYTHON:-python3}
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000 ))}
t_start=$SECONDS
declare -a table
row() { table+=("$(printf '%-44s %s' "$1" "$2")"); echo "== $1: $2"; }
stage() { echo; echo "=== $* ($((SECONDS - t_start)) s)"; }

stage "device"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv 2>&1 | tee "$out/device.log"

stage "build (sm_90, bf16 and fp32, dev/cuda)"
if timeout 300 make -j16 CUDA_ARCHS=90 train_gpt2cu test_gpt2cu train_gpt2fp32cu \
        test_gpt2fp32cu cuda-dev > "$out/build.log" 2>&1; then
    row "build" "ok ($((SECONDS - t_start)) s)"
else
    row "build" "FAILED (build.log)"; tail -30 "$out/build.log"
    printf '%s\n' "${table[@]}"; exit 1
fi

stage "dev/cuda kernel checks and timings"
for prog in matmul_fp32 matmul_bf16 attention_fp32 attention_bf16 norm_fp32 norm_bf16 \
            cbwc_fp32 cbwc_bf16; do
    if timeout 120 "build/dev/cuda/$prog" > "$out/dev_$prog.log" 2>&1 &&
       ! grep -q '^SKIP' "$out/dev_$prog.log"; then
        row "dev/cuda $prog" "PASS"
    else
        row "dev/cuda $prog" "FAIL (dev_$prog.log)"; tail -20 "$out/dev_$prog.log"
    fi
done
grep -h '^RESULT' "$out"/dev_*_bf16.log | sed 's/^RESULT //' > "$out/kernels.txt"

stage "GPU tests against the PyTorch reference (seed $seed)"
tmp=$(mktemp -d /tmp/foldnorm_check.XXXXXX)   # states and data: big, not logs
work="$tmp/states"; mkdir -p "$work"
# small: 2 layers C=64; odd: 3 layers, 6 heads, V not a multiple of 128, T < maxT
small="--steps 5"
odd="--L 3 --C 96 --NH 6 --V 301 --Vp 384 --maxT 40 --B 2 --T 24 --init gpt2 --steps 5 --lr 3e-3"
gpu_test() { # NAME BINARY MODEL STATE [flags]: one row, the log in $out/NAME.log
    local name=$1 bin=$2; shift 2
    if timeout 120 "bin/$bin" "$@" > "$out/$name.log" 2>&1 && ! grep -q '^SKIP' "$out/$name.log"; then
        row "$name" "PASS"
    else
        row "$name" "FAIL ($name.log)"; tail -25 "$out/$name.log"
    fi
}
for mode in ln rms cbwc; do
    for shape in small odd; do
        s=$(( seed + (${#mode} * 7) + (${#shape} * 13) ))
        $PY dev/reference/gpt2.py --mode $mode --seed $s --model "$work/${mode}_$shape.bin" \
            --state "$work/${mode}_${shape}_state.bin" ${!shape} > "$out/ref_${mode}_$shape.log" 2>&1 ||
            { row "reference $mode $shape" "FAIL (ref_${mode}_$shape.log)"; continue; }
        extra=()
        [ $shape = small ] && extra=(--curve 20 --seed $s)
        [ $shape = small ] && [ $mode = ln ] && extra+=(--equivalence 10)
        gpu_test "test_fp32_${mode}_$shape" test_gpt2fp32cu "$work/${mode}_$shape.bin" \
            "$work/${mode}_${shape}_state.bin" "${extra[@]}"
        gpu_test "test_bf16_${mode}_$shape" test_gpt2cu "$work/${mode}_$shape.bin" \
            "$work/${mode}_${shape}_state.bin" "${extra[@]}"
    done
done

stage "compute-sanitizer memcheck on one fp32 reference test (where the runtime allows it)"
if command -v compute-sanitizer > /dev/null && [ -f "$work/cbwc_odd.bin" ]; then
    if timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 bin/test_gpt2fp32cu \
            "$work/cbwc_odd.bin" "$work/cbwc_odd_state.bin" > "$out/memcheck.log" 2>&1 &&
       ! grep -q '^SKIP' "$out/memcheck.log"; then
        row "memcheck test_gpt2fp32cu cbwc odd" "PASS"
    elif [ $? -eq 3 ]; then
        row "memcheck test_gpt2fp32cu cbwc odd" "FAIL (memcheck.log)"; tail -20 "$out/memcheck.log"
    else
        row "memcheck test_gpt2fp32cu cbwc odd" "unavailable here (memcheck.log)"
    fi
fi

stage "GPT-2 124M training benchmarks (bf16, B=$B T=1024, $STEPS steps, random tokens)"
data="$tmp/data"; mkdir -p "$data"
$PY - "$data" <<'EOF'
import os, struct, sys
# llm.c token shards (magic 20240520, version 1) of random GPT-2 tokens
def tokens(n, seed):
    try:
        import numpy as np
        return np.random.default_rng(seed).integers(0, 50257, n, dtype=np.uint16).tobytes()
    except ImportError:
        import random
        rng = random.Random(seed)
        return struct.pack(f"<{n}H", *(rng.randrange(50257) for _ in range(n)))
for name, n, seed in (("bench_train_000000.bin", 4 << 20, 1), ("bench_val_000000.bin", 1 << 20, 2)):
    with open(os.path.join(sys.argv[1], name), "wb") as f:
        f.write(struct.pack("<256i", *([20240520, 1, n] + [0] * 253)))
        f.write(tokens(n, seed))
EOF
for mode in ln rms cbwc; do
    log="$out/train_$mode.log"
    if timeout 150 bin/train_gpt2cu -e d12 -N $mode -b $B -t 1024 -x $STEPS -v 0 -sh 0 -l 1e-4 \
            -i "$data/bench_train_*.bin" -j "$data/bench_val_*.bin" > "$log" 2>&1; then
        row "train d12 $mode" "$(grep '^summary' "$log" | sed 's/^summary | //')"
    else
        row "train d12 $mode" "FAIL (train_$mode.log)"; tail -15 "$log"
    fi
done
stage "inference: LN vs RMS (= folded) forward, 16384 tokens a pass, T = 1024 ... 16384"
for T in 1024 2048 4096 8192 16384; do
    b=$(( 16384 / T ))
    for mode in ln rms; do
        timeout 90 bin/train_gpt2cu -e d12t16384 -N $mode -b $b -t $T -inf 5 \
            > "$out/inference_${mode}_$T.log" 2>&1 || echo "FAIL inference $mode T=$T" >> "$out/inference_${mode}_$T.log"
    done
    ms_ln=$(grep -oE '[0-9.]+ ms/forward' "$out/inference_ln_$T.log" | cut -d' ' -f1)
    ms_rms=$(grep -oE '[0-9.]+ ms/forward' "$out/inference_rms_$T.log" | cut -d' ' -f1)
    if [ -n "$ms_ln" ] && [ -n "$ms_rms" ]; then
        row "inference T=$T (B=$b)" "$(awk -v a="$ms_ln" -v b="$ms_rms" \
            'BEGIN {printf "ln %.2f ms, rms %.2f ms: rms saves %.1f%%", a, b, 100 * (a - b) / a}')"
    else
        row "inference T=$T (B=$b)" "FAIL (inference_*_$T.log)"
    fi
done

if [ -n "$llmc_dir" ] && [ -d "$llmc_dir" ]; then
    stage "llm.c train_gpt2cu without cuDNN, same data and batch"
    log="$out/llmc.log"
    if (cd "$llmc_dir" && timeout 240 make train_gpt2cu USE_CUDNN=0 GPU_COMPUTE_CAPABILITY=90 \
            > "$out/llmc_build.log" 2>&1) &&
       timeout 150 "$llmc_dir/train_gpt2cu" -e d12 -b $B -t 1024 -d $((B * 1024)) -x $STEPS \
            -v 100000 -m 1 -s 0 -y 0 -i "$data/bench_train_*.bin" -j "$data/bench_val_*.bin" \
            -o "$tmp/llmc_run" > "$log" 2>&1; then
        # llm.c ends with "total average iteration time: X ms" (the first step excluded)
        ms=$(grep -oE 'total average iteration time: [0-9.]+' "$log" | grep -oE '[0-9.]+$')
        tps=$(awk -v ms="${ms:-0}" -v b=$B 'BEGIN {if (ms > 0) printf "%.0f", b * 1024 * 1000 / ms}')
        row "llm.c train_gpt2cu d12 (no cuDNN)" "${tps:-?} tok/s (llmc.log)"
    else
        row "llm.c train_gpt2cu d12 (no cuDNN)" "FAIL (llmc_build.log, llmc.log)"; tail -15 "$log" 2>/dev/null
    fi
fi

echo
echo "=== summary ($((SECONDS - t_start)) s; logs in $out)"
printf '%s\n' "${table[@]}" | tee "$out/summary.txt"
echo "kernels (bf16):"
sed 's/^/  /' "$out/kernels.txt"
rm -rf "$tmp"
! grep -q 'FAIL' "$out/summary.txt"
