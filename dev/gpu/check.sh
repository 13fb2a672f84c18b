#!/usr/bin/env bash
# One call on a GPU machine (at most 7 minutes): builds with all cores, then
#   build; fp32 tests; bf16 tests; ViT and Swin tests (fp32, bf16); Fashion-MNIST training
#   (ViT, Swin; images/s); Swin-Tiny images/s at 224 with and without the host
#   prefetch pool; dev/cuda kernel checks; compute-sanitizer
#   memcheck, racecheck, initcheck, synccheck on the small fp32 test; d12
#   training steps in every mode (and llm.c's train_gpt2cu side by side when
#   LLMC_DIR is given); norm kernels vs copy bandwidth; Swin's window
#   attention and patch merging timed; folded (rms) vs LN inference at three T.
# A stage that no longer fits before the deadline is skipped (its row says
# so). After every stage OUTDIR/summary.txt (the table) and
# OUTDIR/combined.log (every log so far) are rewritten, so a killed call
# still returns what it found. The reference states come from
# dev/gpu/make_states.sh (fixed seeds, made where torch is, carried in):
# any failing row replays in the emulator with the same files (docs/cuda.md).
#   dev/gpu/check.sh OUTDIR [LLMC_DIR]
# Env: CHECK_DEADLINE_S (script seconds, default 390), CHECK_B (d12
# micro-batch, default 16), CHECK_STEPS (default 8), CHECK_STATES (default
# dev/gpu/states).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: dev/gpu/check.sh OUTDIR [LLMC_DIR]}
llmc_dir=${2:-}
mkdir -p "$out"
out=$(cd "$out" && pwd)
deadline=${CHECK_DEADLINE_S:-390}
B=${CHECK_B:-16}
STEPS=${CHECK_STEPS:-8}
states=${CHECK_STATES:-dev/gpu/states}
t_start=$SECONDS
tmp=$(mktemp -d /tmp/foldnorm_check.XXXXXX)
logs=$tmp/logs; mkdir -p "$logs"
: > "$out/summary.txt"
declare -a table
stage_name=""
row() { table+=("$(printf '%-40s %s' "$1" "$2")"); echo "== $1: $2"; }
# writes the table and the combined log (called after every stage)
flush() {
    { printf '%s\n' "${table[@]}"; echo "($((SECONDS - t_start)) s of $deadline)"; } > "$out/summary.txt"
    for f in "$logs"/*.log; do [ -e "$f" ] && { echo "===== $(basename "$f")"; cat "$f"; }; done > "$out/combined.log"
}
# stage NAME SECONDS: 0 when the stage fits before the deadline, else a SKIP row
stage() {
    flush
    stage_name=$1
    local left=$((deadline - (SECONDS - t_start)))
    if [ "$2" -gt "$left" ]; then row "$1" "SKIP (needs ~$2 s, $left s left)"; return 1; fi
    echo; echo "=== $1 ($((SECONDS - t_start)) s)"
}
# run NAME TIMEOUT COMMAND...: one row, PASS or FAIL, the output in logs/NAME.log
run() {
    local name=$1 limit=$2; shift 2
    if timeout "$limit" "$@" > "$logs/$name.log" 2>&1 && ! grep -q '^SKIP' "$logs/$name.log"; then
        row "$name" "PASS"
    else
        row "$name" "FAIL (combined.log: $name)"; tail -15 "$logs/$name.log"
    fi
}

if stage "device" 5; then
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv > "$logs/device.log" 2>&1
    cat "$logs/device.log"
fi

if stage "build" 240; then
    if timeout 240 make -j"$(nproc)" CUDA_ARCHS=90 train_gpt2cu test_gpt2cu train_gpt2fp32cu \
            test_gpt2fp32cu train_vitcu test_vitcu train_vitfp32cu test_vitfp32cu test_swincu \
            test_swinfp32cu cuda-dev > "$logs/build.log" 2>&1; then
        row "build (sm_90, -j$(nproc))" "ok ($((SECONDS - t_start)) s)"
    else
        row "build" "FAILED (combined.log: build)"; tail -30 "$logs/build.log"; flush; exit 1
    fi
fi

if [ ! -f "$states/seeds.txt" ]; then # not carried: make them here if torch is present
    dev/gpu/make_states.sh "$tmp/states" > "$logs/states.log" 2>&1 && states=$tmp/states
fi
have_states=0
[ -f "$states/seeds.txt" ] && have_states=1 || row "reference states" "missing: run dev/gpu/make_states.sh and carry dev/gpu/states"
# model tests: BINARY PREFIX; small shapes also run the curve (and ln the equivalence)
model_tests() {
    local bin=$1 prefix=$2 mode shape seed
    while read -r mode shape seed; do
        local extra=()
        [ "$shape" = small ] && extra=(--curve 20 --seed "$seed")
        [ "$shape" = small ] && [ "$mode" = ln ] && extra+=(--equivalence 10)
        run "${prefix}_${mode}_$shape" 60 "bin/$bin" "$states/${mode}_$shape.bin" \
            "$states/${mode}_${shape}_state.bin" "${extra[@]}"
    done < "$states/seeds.txt"
}
if [ $have_states = 1 ] && stage "fp32 tests" 60; then model_tests test_gpt2fp32cu test_fp32; fi
if [ $have_states = 1 ] && stage "bf16 tests" 60; then model_tests test_gpt2cu test_bf16; fi
# ViT (issue 15): the same checks against dev/reference/vit.py's states
vit_tests() {
    local bin=$1 prefix=$2 mode shape seed
    [ -f "$states/vit_seeds.txt" ] || { row "$prefix" "SKIP (no vit states: rerun dev/gpu/make_states.sh)"; return; }
    while read -r mode shape seed; do
        local extra=()
        [ "$shape" = small ] && extra=(--curve 20 --seed "$seed")
        [ "$shape" = small ] && [ "$mode" = ln ] && extra+=(--equivalence 10)
        run "${prefix}_${mode}_$shape" 60 "bin/$bin" "$states/vit_${mode}_$shape.bin" \
            "$states/vit_${mode}_${shape}_state.bin" "${extra[@]}"
    done < "$states/vit_seeds.txt"
}
if [ $have_states = 1 ] && stage "ViT tests" 60; then
    vit_tests test_vitfp32cu vit_fp32
    vit_tests test_vitcu vit_bf16
fi

# Swin (issue 15): test_swin*cu against dev/reference/swin.py's states; ln_b (centring ops on)
# also checks ln == cbwc over 8 steps
swin_tests() {
    local bin=$1 prefix=$2 tag seed
    [ -f "$states/swin_seeds.txt" ] || { row "$prefix" "SKIP (no swin states: rerun dev/gpu/make_states.sh)"; return; }
    while read -r tag seed; do
        local extra=()
        [ "$tag" = ln_b ] && extra=(--equivalence 8)
        run "${prefix}_$tag" 60 "bin/$bin" "$states/swin_$tag.bin" "$states/swin_${tag}_state.bin" "${extra[@]}"
    done < "$states/swin_seeds.txt"
}
if [ $have_states = 1 ] && stage "Swin tests" 60; then
    swin_tests test_swinfp32cu swin_fp32
    swin_tests test_swincu swin_bf16
fi

# Fashion-MNIST end to end on the device (bf16), one row per family and mode with its
# images/s and test accuracy: Debian's files where installed, else data/fashion-mnist (copy
# /usr/share/datasets/fashion-mnist there and carry it)
fmnist=/usr/share/datasets/fashion-mnist
[ -d "$fmnist" ] || fmnist=data/fashion-mnist
if stage "Fashion-MNIST training (bf16)" 90; then
    if [ -d "$fmnist" ]; then
        for fam in vit swin; do
            for mode in ln rms cbwc; do
                log=$logs/fmnist_${fam}_$mode.log
                if timeout 14 bin/train_vitcu -i "$fmnist" -e $fam -N $mode -b 128 -ep 1 -x 60 \
                        -nt 8192 -ne 2048 > "$log" 2>&1 && grep -q '^final:' "$log"; then
                    row "train_vitcu $fam $mode (B=128)" "$(grep '^final:' "$log" | awk '{
                        for (i = 1; i < NF; i++) if ($i == "images_per_s" || $i == "test_accuracy") v[$i] = $(i + 1)
                        printf "%s images/s, test accuracy %s", v["images_per_s"], v["test_accuracy"] }')"
                else
                    row "train_vitcu $fam $mode" "FAIL (combined.log: fmnist_${fam}_$mode)"; tail -10 "$log"
                fi
            done
        done
    else
        row "Fashion-MNIST training" "SKIP (no $fmnist: copy /usr/share/datasets/fashion-mnist to data/fashion-mnist and carry it)"
    fi
fi

# Swin-Tiny (bf16) at 224x224 on an image shard of random pixels (256x256 stored, the
# images_to_shard default for -cs 224): images/s with the host prefetch pool (-dw 8, the
# default; llmc/batch_prefetch.c) and with each batch built between steps (-dw 0)
make_image_shards() {
    python3 - "$tmp/images" <<'PYEOF'
import os, struct, sys
os.makedirs(sys.argv[1], exist_ok=True)
for name, n, side, kind in (("in_train.bin", 768, 256, 0), ("in_val.bin", 64, 224, 1)):
    with open(os.path.join(sys.argv[1], name), "wb") as f:
        f.write(struct.pack("<256i", *([20261201, 1, n, 100, side, 3, kind, 224] + [0] * 248)))
        f.write(struct.pack(f"<{n}i", *(i % 100 for i in range(n))))
        f.write(os.urandom(n * side * side * 3))
PYEOF
}
if stage "Swin-Tiny images/s (224 crops)" 50; then
    if make_image_shards > "$logs/image_shards.log" 2>&1; then
        for dw in 8 0; do
            log=$logs/swin_tiny_dw$dw.log
            if timeout 22 bin/train_vitcu -e swin-tiny -i "$tmp/images/in_train.bin" -j "$tmp/images/in_val.bin" \
                    -N cbwc -b 64 -ep 1 -pe 4 -dw $dw > "$log" 2>&1 && grep -q '^final:' "$log"; then
                row "train_vitcu swin-tiny B=64 -dw $dw" "$(grep '^final:' "$log" | awk '{
                    for (i = 1; i < NF; i++) if ($i == "images_per_s") printf "%s images/s", $(i + 1) }')"
            else
                row "train_vitcu swin-tiny -dw $dw" "FAIL (combined.log: swin_tiny_dw$dw)"; tail -10 "$log"
            fi
        done
    else
        row "Swin-Tiny images/s" "FAIL (combined.log: image_shards)"
    fi
fi

# exact resume on the device (bf16, cbwc): 20 steps, and the same run resumed from its
# checkpoint of step 10, must end on the same fp32 master weights, byte for byte
if [ -d "$fmnist" ] && stage "train_vitcu resume" 30; then
    res=(-i "$fmnist" -e vit -N cbwc -b 128 -x 20 -n 10 -nt 2560 -ne 256 -pe 10)
    log=$logs/vit_resume.log
    if timeout 12 bin/train_vitcu "${res[@]}" -o "$tmp/resume_full" > "$log" 2>&1 &&
       mkdir -p "$tmp/resume_half" &&
       cp "$tmp/resume_full"/{run.txt,main.log,model_00000010.bin,state_00000010.bin} "$tmp/resume_half/" &&
       timeout 12 bin/train_vitcu "${res[@]}" -o "$tmp/resume_half" -y 1 >> "$log" 2>&1 &&
       cmp "$tmp/resume_full/model_00000020.bin" "$tmp/resume_half/model_00000020.bin" >> "$log" 2>&1; then
        row "train_vitcu -y 1 from step 10 of 20" "PASS (the same final model, byte for byte)"
    else
        row "train_vitcu -y 1 from step 10 of 20" "FAIL (combined.log: vit_resume)"; tail -10 "$log"
    fi
fi

if stage "dev/cuda kernel checks" 40; then
    for prog in build/dev/cuda/*_fp32 build/dev/cuda/*_bf16; do # every dev/cuda/*.cu, both builds
        DEV_CUDA_CHECK_ONLY=1 run "dev_$(basename "$prog")" 30 "$prog"
    done
fi

if [ $have_states = 1 ] && stage "compute-sanitizer" 150; then
    if command -v compute-sanitizer > /dev/null; then
        for tool in memcheck racecheck initcheck synccheck; do
            run "sanitizer_$tool" 60 compute-sanitizer --tool $tool --error-exitcode 3 \
                bin/test_gpt2fp32cu "$states/ln_small.bin" "$states/ln_small_state.bin"
        done
    else
        row "compute-sanitizer" "SKIP (not on the PATH)"
    fi
fi

# llm.c token shards (magic 20240520, version 1) of random GPT-2 tokens
make_bench_data() {
    mkdir -p "$tmp/data"
    python3 - "$tmp/data" <<'PYEOF'
import os, random, struct, sys
for name, n, seed in (("bench_train_000000.bin", 2 << 20, 1), ("bench_val_000000.bin", 1 << 18, 2)):
    rng = random.Random(seed)
    with open(os.path.join(sys.argv[1], name), "wb") as f:
        f.write(struct.pack("<256i", *([20240520, 1, n] + [0] * 253)))
        f.write(struct.pack(f"<{n}H", *(rng.randrange(50257) for _ in range(n))))
PYEOF
}
if stage "d12 training" 120; then
    make_bench_data
    for mode in ln rms cbwc; do
        log=$logs/train_d12_$mode.log
        if timeout 60 bin/train_gpt2cu -e d12 -N $mode -b "$B" -t 1024 -x "$STEPS" -v 0 -sh 0 -l 1e-4 \
                -i "$tmp/data/bench_train_*.bin" -j "$tmp/data/bench_val_*.bin" > "$log" 2>&1; then
            row "train d12 $mode (B=$B T=1024)" "$(grep '^summary' "$log" | sed 's/^summary | //')"
        else
            row "train d12 $mode" "FAIL (combined.log: train_d12_$mode)"; tail -10 "$log"
        fi
    done
    if [ -n "$llmc_dir" ] && [ -d "$llmc_dir" ] && stage "llm.c d12 side by side" 200; then
        log=$logs/llmc.log
        if (cd "$llmc_dir" && timeout 150 make -j"$(nproc)" train_gpt2cu USE_CUDNN=0 \
                GPU_COMPUTE_CAPABILITY=90) > "$logs/llmc_build.log" 2>&1 &&
           timeout 60 "$llmc_dir/train_gpt2cu" -e d12 -b "$B" -t 1024 -d $((B * 1024)) -x "$STEPS" \
                -v 100000 -m 1 -s 0 -y 0 -i "$tmp/data/bench_train_*.bin" \
                -j "$tmp/data/bench_val_*.bin" -o "$tmp/llmc_run" > "$log" 2>&1; then
            ms=$(grep -oE 'total average iteration time: [0-9.]+' "$log" | grep -oE '[0-9.]+$')
            tps=$(awk -v ms="${ms:-0}" -v b="$B" 'BEGIN {if (ms > 0) printf "%.0f", b * 1024 * 1000 / ms}')
            row "llm.c train_gpt2cu d12 (no cuDNN)" "${tps:-?} tok/s"
        else
            row "llm.c train_gpt2cu d12 (no cuDNN)" "FAIL (combined.log: llmc_build, llmc)"
        fi
    fi
fi

if stage "norm kernels vs copy bandwidth" 40; then
    run "norm_bandwidth_bf16" 40 build/dev/cuda/norm_bf16 65536 768 16384 1600
    while read -r line; do # "kind bf16 N=.. C=.. fwd .. GB/s ..% | bwd .. (of copy ..)"
        row "  ${line%% fwd*}" "fwd${line#* fwd}"
    done < <(grep -h '^RESULT' "$logs/norm_bandwidth_bf16.log" | sed 's/^RESULT //')
fi

if stage "Swin kernels timed (Swin-T stage 1, B=64)" 30; then
    for k in swin_window_attention swin_patch_merge; do # the checks again, then the timing
        run "${k}_timing_bf16" 15 "build/dev/cuda/${k}_bf16"
        while read -r line; do row "  ${line%% fwd*}" "fwd${line#* fwd}"; done \
            < <(grep -h '^RESULT' "$logs/${k}_timing_bf16.log" | sed 's/^RESULT //')
    done
fi

if stage "inference: folded (rms) vs LN" 60; then
    for T in 1024 4096 16384; do
        b=$(( 16384 / T ))
        for mode in ln rms; do
            timeout 25 bin/train_gpt2cu -e d12t16384 -N $mode -b $b -t $T -inf 5 \
                > "$logs/inference_${mode}_$T.log" 2>&1
        done
        ms_ln=$(grep -oE '[0-9.]+ ms/forward' "$logs/inference_ln_$T.log" | cut -d' ' -f1)
        ms_rms=$(grep -oE '[0-9.]+ ms/forward' "$logs/inference_rms_$T.log" | cut -d' ' -f1)
        if [ -n "$ms_ln" ] && [ -n "$ms_rms" ]; then
            row "inference T=$T (B=$b)" "$(awk -v a="$ms_ln" -v b="$ms_rms" \
                'BEGIN {printf "ln %.2f ms, rms %.2f ms: folded saves %.1f%%", a, b, 100 * (a - b) / a}')"
        else
            row "inference T=$T (B=$b)" "FAIL (combined.log: inference_*_$T)"
        fi
    done
fi

flush
echo; echo "=== summary ($((SECONDS - t_start)) s)"; cat "$out/summary.txt"
rm -rf "$tmp"
! grep -q 'FAIL' "$out/summary.txt"
