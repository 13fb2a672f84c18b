#!/usr/bin/env bash
# CUDA emulation: does the emulated test bite? Builds test_gpt2fp32cu (or, for
# the tensor-core kernels, the bf16 test_gpt2cu, whose default they are) from a
# copy of the rewritten llmc/ sources with one mutation each and asserts that
# the test now FAILS on the given reference state (and passes unmutated):
#   sync:  the __syncthreads before norm_backward_kernel sums its warps' partials removed
#   sync_zero: the __syncthreads after norm_backward_kernel zeroes its shared sums removed
#   index: flash attention's tile loads read q, k, v, dy one feature off (d -> (d + 1) % hs)
#   tc-causal: the tensor-core forward's causal mask lets each query see the next key
#   tc-index:  the tensor-core products read the B operand's 8-column tiles swapped in pairs
#   tc-barrier: the tensor-core forward's one __syncthreads a key/value tile (after
#              the tile's cp.async wait, before the next tile's loads) removed
#              (checked by dev/cuda/attention_variants bf16)
#   tc-wait:   the tensor-core forward's cp.async.wait_group before that barrier
#              removed: the tile is read before its copies land
#   tc-bwd-wait, tc-bwd-barrier: the tensor-core backward's cp.async.wait_group
#              of a query tile, and its __syncthreads between writing dS^T and
#              the dQ products that read it, removed (races, attention_variants)
#   tc-partial-rows: the dQ reduce reads each key block's row of the next
#              query; tc-partial-dropped: it leaves out key block 0's row
#              (both must fail attention_variants' numbers: its T = 130 has
#              two key blocks)
#   wait-grads: grad_sync.cuh's reduction stream no longer waits for the
#              backward's gradients (its cudaStreamWaitEvent on grads_done)
#   wait-comm:  the compute stream no longer waits for the reductions (the
#              cudaStreamWaitEvent on comm_done)
# The three barrier mutants must fail as races: the race detector's report
# (dev/cuda/emu/emu_race.cpp), where the build has it (not SAN=1); without it
# they must fail by their numbers, or SKIP where the numbers cannot show them
# (SAN=1 only: a plain build without the detector is a failure).
# The two stream mutants (dev/cuda/emu/emu_streams.cpp) run train_gpt2fp32cu
# over 2 ranks as threads, ZeRO-1, 2 steps on the shards SHARDS_train_*.bin:
# wait-grads must abort with the race detector's stream race (stream-0 work
# is done when the host queues the reduction, so only the detector sees it),
# wait-comm must fail or end on another model than the unmutated program's
# (the queued reductions run after the update).
# usage: dev/cuda/emu/mutation_check.sh WORKDIR MODEL.bin STATE.bin SHARDS
#        (exit 0: every mutant caught)
set -uo pipefail
cd "$(dirname "$0")/../../.."
work=$1 model=$2 state=$3
mkdir -p "$work"
flags=$(make -s emu-flags) || { echo "FAIL: make emu-flags"; exit 1; }
compile=$(sed -n 1p <<< "$flags") link=$(sed -n 2p <<< "$flags")
racecheck=0
grep -q -- '-fsanitize=thread' <<< "$compile" && racecheck=1
# only the SAN=1 build (ASan: TSan does not combine with it) may lack the
# detector; a plain build without it would SKIP every barrier mutant
if [ $racecheck = 0 ] && ! grep -q -- '-fsanitize=address' <<< "$compile"; then
    echo "FAIL: this plain emulated build has no race detector (no -fsanitize=thread in: $compile); mk/emu.mk builds it"
    exit 1
fi
fails=0
# mutant NAME FILE PYTHON-EXPRESSION [PRECISION [RACE]] (s: the file's text -> the
# mutated text; PRECISION fp32 (default) or bf16; RACE: the run must abort with the
# race detector's report on this memory)
mutant() {
    local name=$1 file=$2 expr=$3 race=${5:-} dir=$work/$1 defs=-DFOLDNORM_FP32 test=test_gpt2fp32cu
    [ "${4:-fp32}" = bf16 ] && defs= && test=test_gpt2cu
    rm -rf "$dir"; mkdir -p "$dir"; cp -r build/emu/src/llmc "$dir/llmc"
    python3 -c "import sys; p = sys.argv[1]; s = open(p).read(); t = $expr
if t == s: sys.exit('mutation did not apply')
open(p, 'w').write(t)" "$dir/llmc/$file" || { echo "FAIL $name: the mutation no longer applies to $file"; fails=$((fails + 1)); return; }
    # -iquote: searched before every -I, so cuda/gpt2_cuda.cuh and all it includes come from the mutant
    # shellcheck disable=SC2086
    if ! $compile -iquote "$dir/llmc" $defs -x c++ -c build/emu/src/test/test_gpt2.cu -o "$dir/test.o" > "$dir/build.log" 2>&1 ||
       ! g++ "$dir/test.o" $link -o "$dir/$test" >> "$dir/build.log" 2>&1; then
        echo "FAIL $name: the mutant does not build"; tail -5 "$dir/build.log"; fails=$((fails + 1)); return
    fi
    # (the braces: a race aborts the run, and bash's "Aborted" goes to the log too)
    # the race detector only where a race is the expected report (it costs 1.5-2.5x a run)
    if { EMU_RACECHECK=$([ -n "$race" ] && echo 1 || echo 0) "$dir/$test" "$model" "$state"; } > "$dir/run.log" 2>&1; then
        if [ -n "$race" ] && [ $racecheck = 0 ]; then
            # a barrier mutant the emulator's fiber order does not show in the numbers
            # (sync_zero: the zeroing thread runs ahead of the readers anyway)
            echo "SKIP $name: the numbers do not show it and only the race detector would, which this build lacks (SAN=1)"
        else
            echo "FAIL $name: the emulated test still passes with the mutation ($file)"; fails=$((fails + 1))
        fi
    elif [ -n "$race" ] && [ $racecheck = 1 ]; then
        if grep -qF "on $race" "$dir/run.log" && grep -q '^emulated CUDA error.*: race (' "$dir/run.log"; then
            echo "ok   $name: mutant caught as a race: $(grep -m1 'race (' "$dir/run.log")"
        else
            echo "FAIL $name: the mutant fails, but not with a race report on $race: $(grep -m1 -E 'FAIL|error' "$dir/run.log")"
            fails=$((fails + 1))
        fi
    else
        echo "ok   $name: mutant caught ($(grep -m1 -E 'FAIL|error' "$dir/run.log" | sed 's/  */ /g'))"
    fi
}
mutant sync cuda/norm.cuh "s.replace('    __syncthreads();\n    // the warps\' sums in warp order', '    // the warps\' sums in warp order')" fp32 \
    "dynamic shared memory 'acc'"
mutant sync_zero cuda/norm.cuh "s.replace('i += blockDim.x) acc[i] = 0.0f;\\n    __syncthreads();', 'i += blockDim.x) acc[i] = 0.0f;')" fp32 \
    "dynamic shared memory 'acc'"
mutant index cuda/flash_attention.cuh "s.replace('to_float(src[(size_t)r * stride + d])', 'to_float(src[(size_t)r * stride + (d + 1) % hs])')"
mutant tc-causal cuda/flash_attention_tc.cuh "s.replace('(!CAUSAL || tk <= tq) ? s * scale', '(!CAUSAL || tk <= tq + 1) ? s * scale')" bf16
mutant tc-index cuda/attention_tc_warp.cuh "s.replace('mma_load_b_kn(b_tile + kk * 16 * ld + nt * 8, ld)', 'mma_load_b_kn(b_tile + kk * 16 * ld + (nt ^ 1) * 8, ld)')" bf16
# build_dev_mutant NAME FILE PYTHON-EXPRESSION PROGRAM DIR: a copy of llmc/ in DIR with
# FILE mutated, and the bf16 dev/cuda check PROGRAM built on it as DIR/check;
# a mutation that no longer applies or does not build is counted a failure (status 1)
build_dev_mutant() {
    local name=$1 file=$2 expr=$3 prog=$4 dir=$5
    rm -rf "$dir"; mkdir -p "$dir"; cp -r build/emu/src/llmc "$dir/llmc"
    python3 -c "import sys; p = sys.argv[1]; s = open(p).read(); t = $expr
if t == s: sys.exit('mutation did not apply')
open(p, 'w').write(t)" "$dir/llmc/$file" || { echo "FAIL $name: the mutation no longer applies to $file"; fails=$((fails + 1)); return 1; }
    if ! $compile -iquote "$dir/llmc" -x c++ -c "build/emu/src/dev/cuda/$prog.cu" -o "$dir/check.o" > "$dir/build.log" 2>&1 ||
       ! g++ "$dir/check.o" $link -o "$dir/check" >> "$dir/build.log" 2>&1; then
        echo "FAIL $name: the mutant does not build"; tail -5 "$dir/build.log"; fails=$((fails + 1)); return 1
    fi
}
# dev_mutant NAME FILE PYTHON-EXPRESSION PROGRAM RACE: the bf16 dev/cuda check PROGRAM
# (its shapes put several warps' loads in one tile; the test model's T = 16 rows are
# one warp's) must abort with the race detector's report on RACE; a barrier the
# emulator's schedule does not miss, so skipped where there is no detector (SAN=1)
dev_mutant() {
    local name=$1 file=$2 expr=$3 prog=$4 race=$5 dir=$work/$1
    if [ $racecheck = 0 ]; then
        echo "SKIP $name: only the race detector sees it, and this build has none (SAN=1)"; return
    fi
    build_dev_mutant "$name" "$file" "$expr" "$prog" "$dir" || return
    if { DEV_CUDA_CHECK_ONLY=1 EMU_RACECHECK=1 "$dir/check"; } > "$dir/run.log" 2>&1; then
        echo "FAIL $name: dev/cuda/$prog (bf16) still passes with the mutation ($file)"; fails=$((fails + 1))
    elif grep -qF "on $race" "$dir/run.log" && grep -q '^emulated CUDA error.*: race (' "$dir/run.log"; then
        echo "ok   $name: mutant caught as a race: $(grep -m1 'race (' "$dir/run.log" | cut -c1-300)"
    else
        echo "FAIL $name: dev/cuda/$prog fails, but not with a race report on $race: $(grep -m1 -E 'FAIL|error' "$dir/run.log")"
        fails=$((fails + 1))
    fi
}
dev_mutant tc-barrier cuda/flash_attention_tc.cuh "s.replace('        __syncthreads(); // everyone\'s landed, and tile j - 1 is consumed', '        // everyone\'s landed, and tile j - 1 is consumed')" \
    attention_variants "dynamic shared memory 'tc_smem'"
dev_mutant tc-wait cuda/flash_attention_tc.cuh "s.replace('        cp_async_wait_group<0>(); // this thread\'s copies of tile j', '        // this thread\'s copies of tile j')" \
    attention_variants "dynamic shared memory 'tc_smem'"
dev_mutant tc-bwd-wait cuda/flash_attention_tc.cuh "s.replace('        cp_async_wait_group<0>(); // this thread\'s copies of tile i', '        // this thread\'s copies of tile i')" \
    attention_variants "dynamic shared memory 'tc_smem'"
dev_mutant tc-bwd-barrier cuda/flash_attention_tc.cuh "s.replace('        __syncthreads(); // dS^T of every warp is in shared memory', '        // dS^T of every warp is in shared memory')" \
    attention_variants "dynamic shared memory 'tc_smem'"
# dev_number_mutant NAME FILE PYTHON-EXPRESSION PROGRAM: the bf16 dev/cuda check PROGRAM
# (T = 130: two key blocks of the tensor-core backward) must fail by its numbers
dev_number_mutant() {
    local name=$1 file=$2 expr=$3 prog=$4 dir=$work/$1
    build_dev_mutant "$name" "$file" "$expr" "$prog" "$dir" || return
    if { DEV_CUDA_CHECK_ONLY=1 EMU_RACECHECK=0 "$dir/check"; } > "$dir/run.log" 2>&1; then
        echo "FAIL $name: dev/cuda/$prog (bf16) still passes with the mutation ($file)"; fails=$((fails + 1))
    else
        echo "ok   $name: mutant caught ($(grep -m1 -E 'FAIL|error' "$dir/run.log" | sed 's/  */ /g'))"
    fi
}
dev_number_mutant tc-partial-rows cuda/flash_attention_tc.cuh "s.replace('(tc_partial_row0(kb, T, CAUSAL) + t - tc_partial_first_query', '(tc_partial_row0(kb, T, CAUSAL) + (t + 1) % T - tc_partial_first_query')" \
    attention_variants
dev_number_mutant tc-partial-dropped cuda/flash_attention_tc.cuh "s.replace('for (int kb = 0; kb < blocks; kb++) {', 'for (int kb = 1; kb < blocks; kb++) {')" \
    attention_variants
# stream_mutant NAME EXPR RACE: grad_sync.cuh mutated, the trainer over 2 ranks
# (RACE 1: it must abort with a stream race; 0: fail or differ from the unmutated run)
shards=${4:-} # SHARDS_train_*.bin, SHARDS_val_*.bin
stream_flags=(-N cbwc -e d2c64h4v256t64 -i "${shards}_train_*.bin" -j "${shards}_val_*.bin" -b 2 -t 16
              -x 2 -n 2 -v 0 -l 3e-3 -sd 11 -z 1)
stream_run() { # PROGRAM OUT RACECHECK
    rm -rf "$2" "$2.id"
    { EMU_RACECHECK=$3 EMU_RANKS=2 OMP_NUM_THREADS=1 "$1" "${stream_flags[@]}" -pf "$2.id" -o "$2"; } > "$2.log" 2>&1
}
stream_mutant() {
    local name=$1 expr=$2 race=$3 dir=$work/$1
    if [ "$race" = 1 ] && [ $racecheck = 0 ]; then
        echo "SKIP $name: only the race detector sees it, and this build has none (SAN=1)"; return
    fi
    rm -rf "$dir"; mkdir -p "$dir"; cp -r build/emu/src/llmc "$dir/llmc"
    python3 -c "import sys; p = sys.argv[1]; s = open(p).read(); t = $expr
if t == s: sys.exit('mutation did not apply')
open(p, 'w').write(t)" "$dir/llmc/cuda/grad_sync.cuh" || { echo "FAIL $name: the mutation no longer applies to grad_sync.cuh"; fails=$((fails + 1)); return; }
    # shellcheck disable=SC2086
    if ! $compile -iquote "$dir/llmc" -DFOLDNORM_FP32 -Dmain=emu_program_main -x c++ -c build/emu/src/train_gpt2.cu -o "$dir/train.o" > "$dir/build.log" 2>&1 ||
       ! g++ "$dir/train.o" build/emu/runtime/emu_main.o $link -o "$dir/train" >> "$dir/build.log" 2>&1; then
        echo "FAIL $name: the mutant does not build"; tail -5 "$dir/build.log"; fails=$((fails + 1)); return
    fi
    if stream_run "$dir/train" "$dir/run" "$race"; then
        if [ "$race" = 0 ] && ! cmp -s "$dir/run/model_00000002.bin" "$work/stream_base/model_00000002.bin"; then
            echo "ok   $name: mutant caught (2 ranks, ZeRO-1: the step-2 model differs from the unmutated run's)"
        else
            echo "FAIL $name: the 2-rank run still passes with the mutation (grad_sync.cuh)"; fails=$((fails + 1))
        fi
    elif [ "$race" = 1 ] && ! grep -q '^emulated CUDA error: stream race' "$dir/run.log"; then
        echo "FAIL $name: the mutant fails, but not with a stream race: $(grep -m1 -E 'FAIL|error' "$dir/run.log")"
        fails=$((fails + 1))
    else
        echo "ok   $name: mutant caught: $(grep -m1 -E 'FAIL|error' "$dir/run.log" | cut -c1-300)"
    fi
}
if [ -z "$shards" ]; then
    echo "FAIL stream mutants: no token shards given (the 4th argument)"; fails=$((fails + 1))
elif ! stream_run build/emu/train_gpt2fp32cu "$work/stream_base" $racecheck; then
    echo "FAIL stream mutants: the unmutated 2-rank run fails: $(tail -2 "$work/stream_base.log")"; fails=$((fails + 1))
else
    stream_mutant wait-grads "s.replace('    CUDA_CHECK(cudaStreamWaitEvent(gs->comm, gs->grads_done, 0));\n', '')" 1
    stream_mutant wait-comm "s.replace('    CUDA_CHECK(cudaStreamWaitEvent(gs->model->mm.stream, gs->comm_done, 0));\n', '')" 0
fi
[ $fails -eq 0 ]
