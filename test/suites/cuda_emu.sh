#!/usr/bin/env bash
# The CUDA programs under emulation (issue 12): train_gpt2.cu, test/test_gpt2.cu
# and dev/cuda/*.cu built with g++ against dev/cuda/emu (make emu, no nvcc)
# and run on the CPU -- emulated: a logic check, not a device run (races
# beyond the race detector's rules, the memory model, fast-math rounding,
# library algorithm availability, NCCL transport and speed are not covered;
# docs/cuda.md). The race detector checks chosen runs that together launch
# every kernel (test/emu_race_subset.sh; it costs 1.5-2.5x a run).
#   1. test_gpt2fp32cu / test_gpt2cu vs fresh PyTorch reference states: all
#      three modes, two shapes; ln == cbwc with the rms control; the curve vs
#      the CPU trainer; a state with SFT-masked targets; the threads of each
#      block also run in reverse order; --dropout 0.1 (ln, cbwc): the residual
#      dropout kernel's mask bit-exact, the loss and gradients as the CPU
#      model's with the same seed. test_gpt2cu runs the tensor-core
#      attention (its default); the other kinds (-at cublas, flash) on two
#      states in both builds, -at cudnn (the emulator's cuDNN shim) in bf16 on
#      all six and the masked one (SAN=1: cbwc_odd), ln_small with the
#      equivalence and the curve; tc and cudnn refused by the fp32 build
#   2. every dev/cuda kernel check (DEV_CUDA_CHECK_ONLY=1: small shapes, no timings)
#   2b. the attention kinds' FLOPs and bytes as the emulator counts them, against
#      docs/cuda.md's formulas (build/emu/attention_counts)
#   3. train_gpt2cu / train_gpt2fp32cu: a few steps with -o, gradient
#      accumulation, forward-only passes, two ranks as threads over the
#      emulated NCCL, resume where train_gpt2.cu has it; -at cublas, flash, cudnn;
#      -N prms refused (partial RMSNorm is CPU only: the norm policy's reason)
#   4. the mutation check: a removed __syncthreads and a broken index must fail
#      the test (also the tensor-core kernel's causal mask and an operand
#      index, in bf16; the removed barriers, the tensor-core tile's among them,
#      as races: the race detector's report); and first (0) the emulator's own
#      checks must fire (emu_selftest, cp.async among them; emu_cudnn_selftest: the cuDNN shim's refusals), the race detector's among them (in the
#      plain build; SAN=1 has none), and
#      its tensor-core layouts (mma, ldmatrix) must pass, and fail when broken;
#      CUDA graphs: a replay equals the eager run bit for bit (a stale captured
#      scalar makes them differ), and a call a capture forbids fails with CUDA's code
# cores: 1
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
# the race detector on chosen runs (EMU_RACECHECK=1 below), the repeats without:
# ln_small in both builds (its equivalence and rms control run every mode),
# the other attention kinds on it, the dev/cuda checks in thread order, the
# trainers' ln runs, forward-only, two ranks; race_coverage at the end
# under SAN=1 (make SAN=1 test; its emulated runs are 3-5x slower) the suite
# checks memory safety: every kernel and trainer path still runs, on the odd
# shapes, in one thread order, while what only the numbers show (the curves,
# ln == cbwc, the reverse thread order, the other kinds on a second state, the
# mutants) is left to the plain run, which checks every combination
san=${FOLDNORM_SANITIZED:-0}
. test/emu_race_subset.sh
. test/emu_attention_kinds.sh
race_subset_begin
export EMU_RACECHECK=1 # the emulator's own checks, the race detector's among them

# 0. the emulator's own checks fire: CASE and the message it must abort with
# (SHOW: also print the report line)
selftest() {
    local case=$1 pattern=$2 show=${3:-} out
    out=$("$E/emu_selftest" "$case" 2>&1)
    if [ $? -ne 0 ] && grep -qF -- "$pattern" <<< "$out"; then
        ok "emulator catches: $case${EMU_FIBER_ORDER:+ ($EMU_FIBER_ORDER thread order)}"
        if [ -n "$show" ]; then grep -m1 -F -- "$pattern" <<< "$out" | sed 's/^/     /'; fi
    else
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
selftest pinned-reuse "was rewritten while a cudaMemcpyAsync from it could still be running"
"$E/emu_selftest" stream-order > "$work/stream_order.log" 2>&1 &&
    ok "emulator: a created stream's work runs when stream 0 waits for it ($(cat "$work/stream_order.log"))" ||
    bad "emulator selftest stream-order: $(cat "$work/stream_order.log")"
"$E/emu_selftest" pinned-ok > "$work/pinned.log" 2>&1 &&
    ok "emulator: page-locked copies held to their waits (the host's side NaN until then)" ||
    bad "emulator selftest pinned-ok: $(cat "$work/pinned.log")"
"$E/emu_selftest" graph-ok > "$work/graph.log" 2>&1 &&
    ok "emulator: a captured CUDA graph replays the eager run bit for bit, arguments by value" ||
    bad "emulator selftest graph-ok: $(cat "$work/graph.log")"
# the negative control: the eager run with the host scalar changed after the capture differs
if "$E/emu_selftest" graph-stale > "$work/graph_stale.log" 2>&1; then
    bad "emulator selftest graph-stale: a stale captured scalar went unseen: $(cat "$work/graph_stale.log")"
else ok "emulator: a stale captured scalar makes replay and eager differ (the equality can fail)"; fi
selftest graph-malloc "cudaMalloc during stream capture: cudaErrorStreamCaptureUnsupported"
selftest graph-sync "cudaStreamSynchronize during stream capture: cudaErrorStreamCaptureUnsupported"
selftest graph-memcpy "cudaMemcpy (synchronous) during stream capture: cudaErrorStreamCaptureUnsupported"
selftest graph-legacy "on the legacy stream while a blocking stream captures a graph (cudaErrorStreamCaptureImplicit)"
selftest graph-attribute "cudaFuncSetAttribute (the project sets attributes once, at init) during stream capture"
selftest graph-pageable "cudaMemcpyAsync during stream capture: cudaErrorStreamCaptureUnsupported (pageable host memory"
selftest gemm-ld "leading dimension 4 < rows 8"
selftest gemm-range "gemm B: 288 bytes"
selftest lt-align "chosen for 256-byte alignment"
selftest lt-epilogue "epilogue 130 is not emulated"
selftest lt-aux-ld "GELU aux ld 12: cuBLASLt needs"
selftest lt-aux-align "4-byte aligned, cuBLASLt needs 16"
selftest ldmatrix-align "is not 16-byte aligned"
selftest ldmatrix-global "is in global memory (cudaMalloc), not in shared memory"
selftest ldmatrix-local "is in its local memory"
selftest ldmatrix-overrun "overruns the dynamic shared memory (200 bytes)"
selftest mma-partial-warp "mma.sync.m16n8k16 in a partial warp"
selftest mma-divergent "divergent warp: lane 0 is at mma.m16n8k16 while lane 16"
# cp.async (dev/cuda/emu/emu_async.cpp): copies land at the wait that covers
# them (wait_group 2, then 1, then wait_all over three groups, a zero-filled
# and a .ca copy); with the detector off, the destinations not yet covered
# still hold their poison at each wait, the uncommitted ones at every wait_group
"$E/emu_selftest" cp-async-ok > "$work/cp_async.log" 2>&1 &&
    EMU_RACECHECK=0 "$E/emu_selftest" cp-async-peek >> "$work/cp_async.log" 2>&1 &&
    ok "emulator: cp.async lands at the wait covering it (wait_group N leaves the newest N groups pending)" ||
    bad "emulator selftest cp-async-ok / cp-async-peek: $(cat "$work/cp_async.log")"
selftest cp-async-unwaited "cp.async copies not waited for"

# the cuDNN shim's checks fire (dev/cuda/emu/cudnn_selftest.cu: llmc/cuda/cudnn_attention.cuh's
# graphs with one thing wrong, or a descriptor built by hand), and the right graphs run
cudnn_selftest() {
    local case=$1 pattern=$2 out
    out=$("$E/emu_cudnn_selftest" "$case" 2>&1)
    if [ $? -ne 0 ] && grep -q -- "$pattern" <<< "$out"; then ok "cuDNN shim refuses: $case"; else
        bad "cuDNN shim missed $case: $out"; fi
}
"$E/emu_cudnn_selftest" ok > "$work/cudnn_selftest.log" 2>&1 &&
    ok "cuDNN shim: attention forward and backward graphs on the trainer's layout" ||
    bad "cuDNN shim selftest ok: $(cat "$work/cudnn_selftest.log")"
cudnn_selftest stride "Q (uid 1 .*) has the head dimension (dim 3) at stride 96: the fused attention engines need it contiguous"
cudnn_selftest dtype "Q (uid 1) is FLOAT: the fused attention engines take BFLOAT16 or HALF"
cudnn_selftest missing-attribute "OPERATION_MATMUL_DESCRIPTOR): the required attribute CUDNN_ATTR_OPERATION_MATMUL_CDESC is not set"
cudnn_selftest workspace "CUDNN_ATTR_VARIANT_PACK_WORKSPACE is NULL, but the plan needs"
cudnn_selftest variant-pack "the variant pack has no data pointer for uid 5"
cudnn_selftest misaligned "is 4-byte aligned, less than its CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT 16"
cudnn_selftest overlap "uid 1 and uid 4 overlap at .*, and one of them is written"
# EMU_CUDNN_DECLINE=1: every engine the heuristics list declines its plan; the error names
# the last declined cudnnBackendFinalize with its file and line (CUDNN_TRY), as CUDNN_CHECK would
out=$(EMU_CUDNN_DECLINE=1 "$E/emu_cudnn_selftest" ok 2>&1)
if [ $? -ne 0 ] && grep -q "^error: cuDNN found no engine for the attention forward graph (B=1 T=24 NH=2 hs=16 causal): 2 engine configs, the last plan: cudnnBackendFinalize(p.plan) failed at llmc/cuda/cudnn_attention.cuh:[0-9]*: cuDNN status [0-9]* (CUDNN_STATUS_NOT_SUPPORTED): .*engine 0 declines this operation graph" <<< "$out"; then
    ok "cuDNN: no engine takes the graph: $(grep -o 'the last plan: cudnnBackendFinalize(p.plan) failed at [^:]*:[0-9]*' <<< "$out")"
else bad "cuDNN, every plan declined (EMU_CUDNN_DECLINE=1): $out"; fi
# a build without cudnn.h (FOLDNORM_CUDNN undefined) leaves the path out and says so,
# also what the trainers' -at cudnn answers there (attention_kind_refusal)
if out=$("$E/cudnn_attention_nocudnn" 2>&1) && grep -q '^NOT APPLICABLE: .*this build has no cuDNN' <<< "$out" &&
   grep -q '^-at cudnn: this build has no cuDNN' <<< "$out"; then
    ok "dev/cuda/cudnn_attention without cuDNN: $(grep -m1 '^-at cudnn' <<< "$out")"
else
    bad "dev/cuda/cudnn_attention without cuDNN: $out"
fi

# the tensor-core layouts (bf16 mma.m16n8k16, ldmatrix x1/x2/x4 and .trans, the
# fragment helpers of llmc/cuda/mma.cuh: dev/cuda/mma_check.cuh) in both thread
# orders; then a wrong layout must fail them, and only the checks it touches:
# EMU_MMA_MUTATION=swap-lanes (lanes 0 and 4 trade operands) every check,
# no-trans (ldmatrix ignores .trans) the five that use .trans
for order in forward reverse; do
    if EMU_FIBER_ORDER=$order "$E/emu_selftest" mma > "$work/mma_$order.log" 2>&1; then
        ok "emulator: mma and ldmatrix layouts, $(grep -c '^check .* ok$' "$work/mma_$order.log") checks ($order order)"
    else
        bad "emulator mma and ldmatrix layouts ($order order): $(grep -E 'FAIL|error' "$work/mma_$order.log")"
    fi
done
mma_mutant() {
    local mutation=$1 pattern=$2 log=$work/mma_$1.log rc failed expected
    EMU_MMA_MUTATION=$mutation "$E/emu_selftest" mma > "$log" 2>&1
    rc=$?
    failed=$(sed -n 's/^check \([^:]*\):.* FAIL$/\1/p' "$log")
    expected=$(sed -n 's/^check \([^:]*\):.*/\1/p' "$log" | grep -E -- "$pattern")
    if [ $rc -eq 1 ] && [ -n "$failed" ] && [ "$failed" = "$expected" ]; then
        ok "EMU_MMA_MUTATION=$mutation fails the layout checks it breaks ($(grep -c . <<< "$failed") of $(grep -c '^check ' "$log"))"
    else
        bad "EMU_MMA_MUTATION=$mutation (exit $rc): failed [$failed], expected [$expected]"
    fi
}
mma_mutant swap-lanes .
mma_mutant no-trans 'trans|load_b_kn'

# the race detector (dev/cuda/emu/emu_race.cpp), threads in both orders: in reverse, the
# read comes first and the write is the race
if "$E/emu_selftest" racecheck | grep -q 'race checking: on'; then
    selftest shared-race "race (read after write) on shared memory 'word'" show
    selftest warp-race "race (write after read) on shared memory 'words'" show
    selftest blocks-write "race (write after write) on global memory" show
    selftest block-reads "race (read after write) on global memory" show
    selftest thread-reads-global "race (read after write) on global memory" show
    selftest ldmatrix-race "on dynamic shared memory 'tile'" show
    selftest atomic-read "follows the atomics of several blocks" show
    selftest stream-race "stream race on global memory" show
    selftest cp-async-early "race (read of a pending cp.async destination) on dynamic shared memory 'cp_buf'" show
    selftest cp-async-source "race (write of a pending cp.async source) on global memory" show
    export EMU_FIBER_ORDER=reverse
    selftest shared-race "race (write after read) on shared memory 'word'" show
    selftest warp-race "race (read after write) on shared memory 'words'" show
    selftest ldmatrix-race "on dynamic shared memory 'tile'" show
    unset EMU_FIBER_ORDER
    # the negatives (a barrier, __syncwarp, an ldmatrix after a barrier, atomicAdd by every block) ran in "selftest ok"
    sed -n 's/^race detector negatives/ok   race detector negatives/p' "$work/selftest.log"
else
    if [ $san = 1 ]; then
        skip_part "race detector selftests: the SAN=1 build has none (ASan and TSan do not combine)"
    else
        bad "race detector: this plain build has none ($("$E/emu_selftest" racecheck); mk/emu.mk builds it with -DEMU_RACE and -fsanitize=thread)"
    fi
fi

export EMU_RACECHECK=0

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
        [ $shape = small ] && [ $san = 0 ] && extra=(--curve 5 --seed $m)
        [ $shape = small ] && [ $san = 0 ] && [ $mode = ln ] && extra+=(--equivalence 8) # the rms control needs steps to diverge in bf16
        r=0; [ $tag = ln_small ] && r=1
        for b in test_gpt2fp32cu test_gpt2cu; do
            t0=$SECONDS
            if EMU_RACECHECK=$r "$E/$b" "$work/$tag.bin" "$work/${tag}_state.bin" "${extra[@]}" > "$work/$b.$tag.log" 2>&1; then
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

# residual dropout (-rd) on the GPU vs the CPU model: the kernel's output equals
# dropout_apply's bit for bit; the train-mode loss and every gradient with the
# same seed and draws within 1e-5 in fp32 (the bf16 table in bf16); ln and cbwc
for tag in ln_small cbwc_small; do
    r=0; [ $tag = ln_small ] && r=1 # the dropout kernel race-checked (race_coverage)
    for b in test_gpt2fp32cu test_gpt2cu; do
        if EMU_RACECHECK=$r "$E/$b" "$work/$tag.bin" "$work/${tag}_state.bin" --dropout 0.1 --seed $s > "$work/$b.$tag.dropout.log" 2>&1; then
            ok "$b $tag --dropout 0.1: mask bit-exact, train-mode loss and gradients as the CPU's"
        else
            bad "$b $tag --dropout 0.1"; grep -E 'FAIL|error' "$work/$b.$tag.dropout.log" | head -10 | sed 's/^/     /'
        fi
    done
done

# threads run last to first (a missing barrier where a thread reads what a
# later thread writes shows only in this order; in thread order, the other way)
reverse_tags="ln_small cbwc_odd"; [ $san = 1 ] && reverse_tags=
for tag in $reverse_tags; do
    if EMU_FIBER_ORDER=reverse "$E/test_gpt2fp32cu" "$work/$tag.bin" "$work/${tag}_state.bin" \
            > "$work/reverse.$tag.log" 2>&1; then
        ok "test_gpt2fp32cu $tag with the threads of each block run in reverse order"
    else
        bad "test_gpt2fp32cu $tag, reverse order"; grep -E 'FAIL|error' "$work/reverse.$tag.log" | head -10 | sed 's/^/     /'
    fi
done

kind_tags="ln_small cbwc_odd"; [ $san = 1 ] && kind_tags=cbwc_odd
# -at cudnn on every state, the masked one included (1.2-1.5 s a run emulated, ln_small with
# its curve and equivalence 8 s)
cudnn_runs=("ln_small --curve 5 --seed SEED --equivalence 8" rms_small cbwc_small ln_odd rms_odd cbwc_odd mask)
[ $san = 1 ] && cudnn_runs=("cbwc_odd")
# the other attention kernels through the whole model (-at; the default above is tc
# in bf16, flash in fp32); the bf16 tolerances are the same table
attention_kinds "$kind_tags" "test_gpt2cu cublas" "test_gpt2cu flash" "test_gpt2fp32cu cublas"
# cuDNN's fused attention (the emulator's cuDNN shim computes it in double): the
# same tolerance table; ln_small also ln == cbwc and the curve against the CPU model
m=$(( (s + 2 * 7 + 5 * 13) % 1000000 )) # ln_small's seed above
for run in "${cudnn_runs[@]}"; do
    read -r tag extra <<< "${run/SEED/$m}"
    # shellcheck disable=SC2086
    t0=$SECONDS
    if "$E/test_gpt2cu" "$work/$tag.bin" "$work/${tag}_state.bin" -at cudnn $extra > "$work/test_gpt2cu.$tag.cudnn.log" 2>&1 &&
       grep -q "attention cudnn" "$work/test_gpt2cu.$tag.cudnn.log"; then
        ok "test_gpt2cu -at cudnn $tag: logits, loss, gradients, steps${extra:+, $extra} ($((SECONDS - t0)) s)"
    else
        bad "test_gpt2cu -at cudnn $tag"; grep -E 'FAIL|error' "$work/test_gpt2cu.$tag.cudnn.log" | head -10 | sed 's/^/     /'
    fi
done
if "$E/test_gpt2fp32cu" "$work/ln_small.bin" "$work/ln_small_state.bin" -at cudnn > "$work/fp32_cudnn.log" 2>&1; then
    bad "test_gpt2fp32cu -at cudnn: accepted"
elif grep -q "error: -at cudnn: cuDNN's fused attention takes bf16" "$work/fp32_cudnn.log"; then
    ok "test_gpt2fp32cu -at cudnn refused: $(grep -m1 error "$work/fp32_cudnn.log" | cut -c1-80)..."
else
    bad "test_gpt2fp32cu -at cudnn: $(cat "$work/fp32_cudnn.log")"
fi
if "$E/test_gpt2fp32cu" "$work/ln_small.bin" "$work/ln_small_state.bin" -at tc > "$work/fp32_tc.log" 2>&1; then
    bad "test_gpt2fp32cu -at tc: accepted"
elif grep -q "tensor-core kernels take bf16" "$work/fp32_tc.log"; then
    ok "test_gpt2fp32cu -at tc refused: $(grep -m1 error "$work/fp32_tc.log" | cut -c1-80)..."
else
    bad "test_gpt2fp32cu -at tc: $(cat "$work/fp32_tc.log")"
fi

# 2. dev/cuda kernel checks against their CPU references
for prog in "$E"/dev/cuda/*_fp32 "$E"/dev/cuda/*_bf16; do
    name=$(basename "$prog")
    if [[ $name == cudnn_attention_fp32 ]]; then # cuDNN's attention is bf16 only: it must say so
        if "$prog" > "$work/dev_$name.log" 2>&1 && grep -q '^NOT APPLICABLE: .*fp32 build' "$work/dev_$name.log"; then
            ok "dev/cuda $name: $(tail -1 "$work/dev_$name.log")"
        else
            bad "dev/cuda $name"; tail -3 "$work/dev_$name.log" | sed 's/^/     /'
        fi
        continue
    fi
    if [[ $name == cudnn_attention_bf16 ]]; then # its kernels are the shim's host code and flash's (checked
        # in both orders, raced, by flash_attention's own program): one run, no race detector
        if EMU_RACECHECK=0 "$prog" > "$work/dev_$name.log" 2>&1 && tail -1 "$work/dev_$name.log" | grep -q '^OK'; then
            ok "dev/cuda $name (the cuDNN shim vs the CPU oracles and flash)"
        else
            bad "dev/cuda $name"; grep -E 'FAIL|error' "$work/dev_$name.log" | head -10 | sed 's/^/     /'
        fi
        # no deterministic backward engine (EMU_CUDNN_NONDETERMINISTIC=1): each backward's dqkv
        # rounded either way per execute (still within the tolerances), a repeat differs
        log=$work/dev_$name.nondeterministic.log
        if EMU_CUDNN_NONDETERMINISTIC=1 EMU_RACECHECK=0 "$prog" > "$log" 2>&1 && tail -1 "$log" | grep -q '^OK' &&
           [ "$(grep -c 'backward 0 (NONDETERMINISTIC)' "$log")" = 5 ] &&
           [ "$(grep -c 'dqkv repeated *differs (nondeterministic engine)' "$log")" = 5 ]; then
            ok "dev/cuda $name, EMU_CUDNN_NONDETERMINISTIC=1: a nondeterministic engine taken, dqkv within tolerance, each repeat differs"
        else
            bad "dev/cuda $name, EMU_CUDNN_NONDETERMINISTIC=1"; grep -E 'engines|repeated|FAIL|error' "$log" | head -12 | sed 's/^/     /'
        fi
        continue
    fi
    args=()
    [[ $name == norm_* ]] && args=(256 96 40 64) # rows over several warps and blocks; C not a multiple of 256
    if EMU_RACECHECK=1 "$prog" "${args[@]}" > "$work/dev_$name.log" 2>&1 && tail -1 "$work/dev_$name.log" | grep -q '^OK' &&
       { [ $san = 1 ] || { EMU_FIBER_ORDER=reverse "$prog" "${args[@]}" > "$work/dev_$name.reverse.log" 2>&1 &&
                            tail -1 "$work/dev_$name.reverse.log" | grep -q '^OK'; }; }; then
        ok "dev/cuda $name (threads in $([ $san = 1 ] && echo "thread order" || echo "both orders"))"
    else
        bad "dev/cuda $name"; grep -E 'FAIL|error' "$work/dev_$name.log" | head -10 | sed 's/^/     /'
    fi
done

# 2b. one (b, h) of each causal attention kind (tc, cublas, flash), forward and
#     backward at head size 64: the tensor-core FLOPs (mma.m16n8k16 the emulator
#     counted), the emulated cuBLAS's GEMM FLOPs and the global bytes the kernels
#     issued must equal docs/cuda.md's formulas (dev/cuda/emu/attention_counts.cu).
#     T = 256: the formulas are polynomials in T, and T = 1024 (d12's) takes ~10x
#     longer; run it by hand: EMU_TRAFFIC=1 build/emu/attention_counts 1024
if [ $san = 1 ]; then
    skip_part "attention counts (SAN=1: no access hooks, nothing is counted)"
elif EMU_TRAFFIC=1 "$E/attention_counts" 256 > "$work/attention_counts.log" 2>&1 &&
     grep -qx OK "$work/attention_counts.log"; then
    ok "attention counts, one (b, h) at T=256 hs=64: tensor-core and GEMM FLOPs, bytes read and written of tc, cublas, flash = the formulas ($(grep -c ' ok$' "$work/attention_counts.log") counts)"
else
    bad "attention counts"; grep -E 'FAIL|error|NOT' "$work/attention_counts.log" | head -10 | sed 's/^/     /'
fi

# 3. the trainer: -o, two ranks as threads, resume
cat llmc/*/*.c llmc/*/*.h > "$work/text.txt"
[ -x bin/text_to_shard ] || make -s text_to_shard > /dev/null
bin/text_to_shard "$work/text.txt" "$work/src" 0.1 > /dev/null || bad "text_to_shard"
train_flags=(-e d2c64h4v256t64 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin" -b 2 -t 32 -x 4
             -v 2 -m 2 -l 3e-3 -sd $(( s % 1000 + 1 )))
for b in train_gpt2fp32cu train_gpt2cu; do
    for mode in ln cbwc; do
        out=$work/$b.$mode
        r=0; [ $mode = ln ] && r=1
        if EMU_RACECHECK=$r "$E/$b" -N $mode "${train_flags[@]}" -o "$out" > "$out.log" 2>&1 && [ -s "$out/model_00000004.bin" ] &&
           grep -qE '^step +4/4 \| loss [0-9.]+' "$out.log"; then
            ok "$b -N $mode: 4 steps, $(grep -cE '^val loss [0-9.]+' "$out.log") evaluations, model written"
        else
            bad "$b -N $mode"; tail -5 "$out.log" | sed 's/^/     /'
        fi
    done
done
# the other attention kernels in the trainer (tc: above, the bf16 default), and tc refused in fp32
for at in cublas flash cudnn; do
    out=$work/train_gpt2cu.$at
    if "$E/train_gpt2cu" -N cbwc "${train_flags[@]}" -at $at -o "$out" > "$out.log" 2>&1 &&
       grep -q "attention $at" "$out.log" && grep -qE '^step +4/4 \| loss [0-9.]+' "$out.log"; then
        ok "train_gpt2cu -at $at: 4 steps"
    else
        bad "train_gpt2cu -at $at"; tail -5 "$out.log" | sed 's/^/     /'
    fi
done
if "$E/train_gpt2fp32cu" "${train_flags[@]}" -at tc > "$work/train_fp32_tc.log" 2>&1; then
    bad "train_gpt2fp32cu -at tc: accepted"
elif grep -q "error: train_gpt2fp32cu: -at tc: the tensor-core kernels take bf16" "$work/train_fp32_tc.log"; then
    ok "train_gpt2fp32cu -at tc refused with the reason"
else
    bad "train_gpt2fp32cu -at tc: $(cat "$work/train_fp32_tc.log")"
fi
# partial RMSNorm runs on the CPU only: the policy's refusal, before any step
if "$E/train_gpt2fp32cu" -N prms "${train_flags[@]}" > "$work/train_prms.log" 2>&1; then
    bad "train_gpt2fp32cu -N prms: accepted"
elif grep -q "error: gpt2cuda: norm mode prms: partial RMSNorm runs on the CPU only" "$work/train_prms.log" &&
     ! grep -q '^step' "$work/train_prms.log"; then
    ok "train_gpt2fp32cu -N prms refused with the reason"
else
    bad "train_gpt2fp32cu -N prms: $(tail -3 "$work/train_prms.log")"
fi
# gradient accumulation (-d = 2 B T) and the forward-only benchmark (one layer's attention buffer)
if "$E/train_gpt2fp32cu" -N cbwc "${train_flags[@]}" -d 128 -x 2 > "$work/accum.log" 2>&1 &&
   grep -q 'grad_accum=2' "$work/accum.log" && grep -qE '^step +2/2 \| loss [0-9.]+' "$work/accum.log"; then
    ok "train_gpt2fp32cu with gradient accumulation (-d 128 = 2 x B*T)"
else
    bad "gradient accumulation"; tail -5 "$work/accum.log" | sed 's/^/     /'
fi
for run in "ln tc" "cbwc tc" "ln cublas" "ln cudnn"; do
    read -r mode at <<< "$run"
    r=0; [ "$run" = "ln tc" ] && r=1
    if EMU_RACECHECK=$r "$E/train_gpt2cu" -N $mode -e d2c64h4v256t64 -b 2 -t 32 -inf 2 -at $at > "$work/inf_$mode.$at.log" 2>&1 &&
       grep -q "^inference | mode $mode | bf16 | attention $at" "$work/inf_$mode.$at.log"; then
        ok "train_gpt2cu -inf 2 -N $mode -at $at (forward only)"
    else
        bad "train_gpt2cu -inf -N $mode -at $at"; tail -5 "$work/inf_$mode.$at.log" | sed 's/^/     /'
    fi
done
# data parallel: two ranks as threads of one process, the NCCL unique id through -pf
if EMU_RACECHECK=1 EMU_RANKS=2 "$E/train_gpt2fp32cu" -N cbwc "${train_flags[@]}" -pf "$work/nccl.id" > "$work/ranks2.log" 2>&1 &&
   grep -q 'x 2 GPU' "$work/ranks2.log" && [ ! -e "$work/nccl.id" ]; then
    ok "train_gpt2fp32cu, 2 ranks as threads (emulated NCCL, ZeRO-1: the -z default)"
else
    bad "train_gpt2fp32cu, 2 ranks"; tail -5 "$work/ranks2.log" | sed 's/^/     /'
fi
# resume (bit-exact, CPU <-> GPU, ZeRO-1): test/suites/cuda_emu_features.sh

race_coverage

# 4. the harness bites: mutants of the kernels must fail the emulated test
if [ $san = 1 ]; then
    skip_part "mutation check (SAN=1: whether the test sees wrong numbers is the plain run's question; each mutant is a rebuild)"
elif dev/cuda/emu/mutation_check.sh "$work/mutants" "$work/ln_small.bin" "$work/ln_small_state.bin" "$work/src" > "$work/mutants.log" 2>&1; then
    sed 's/^/     /' "$work/mutants.log"; ok "mutation check"
else
    cat "$work/mutants.log"; bad "mutation check"
fi
echo "$fails failed"
suite_exit $fails
