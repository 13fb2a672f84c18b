#!/usr/bin/env bash
# Swin's CUDA kernels under emulation (issue 15; emulated: a logic check, not
# a device run, docs/cuda.md): dev/cuda/swin_window_attention.cu and
# dev/cuda/swin_patch_merge.cu, fp32 and bf16, against the CPU Swin's kernels
# (llmc/kernels/attention_bidir.c, llmc/kernels/swin_window.c) on random inputs from this
# run's seed, with each block's threads in thread order and in reverse (the
# bf16 build also checks the tensor-core window kernel,
# llmc/cuda/swin_window_attention_tc.cuh; it runs race-checked instead of in
# reverse where the race detector is built). The full tier also builds mutants of
# the kernels (the shift mask dropped, the cyclic shift reversed, the relative
# index transposed, the barrier between two windows of a backward block
# removed, the table gradient summing one chunk of windows only,
# PatchMerging's parts swapped; in the tensor-core kernel, checked in bf16:
# the shift mask dropped, the relative index transposed, the barrier before
# the key strips read P and dS removed, the chunk's partial keeping only its
# last window) and asserts that the checks fail on each.
# tier: check
# cores: 1
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/cuda_swin_emu
rm -rf "$work"; mkdir -p "$work"
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
echo "cuda_swin_emu: seed $seed (emulated: a logic check, not a device run)"
export DEV_CUDA_CHECK_ONLY=1 OMP_NUM_THREADS=1
E=build/emu/dev/cuda
kernels="swin_window_attention swin_patch_merge"
targets=()
for k in $kernels; do targets+=("$E/${k}_fp32" "$E/${k}_bf16"); done
make -s "${targets[@]}" build/emu/emu_selftest > "$work/build.log" 2>&1 || { tail -30 "$work/build.log"; echo "FAIL make"; exit 1; }
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
# the race detector on the bf16 checks (EMU_RACECHECK=1 below: the
# tensor-core kernel; it costs 2.5x the bf16 check, 4x the fp32 one) and on
# the fp32 patch merge (its float and Pack<float> instances are fp32's only;
# a few ms), in place of their reverse-order runs; the fp32 window attention
# in both orders without; race_coverage after (every kernel instance)
. test/emu_race_subset.sh
race_subset_begin

# every check line of a run: its largest error per tensor
max_errors() {
    awk '/rel err/ { if (!($1 in m) || $4 + 0 > m[$1]) m[$1] = $4 + 0 }
         END { for (t in m) printf "%s %.1e, ", t, m[t] }' "$@" | sed 's/, $//'
}

for k in $kernels; do
    for p in fp32 bf16; do
        prog=$E/${k}_$p
        # bf16 and the fp32 patch merge race-checked where the detector is built; the run replaces the
        # reverse-order one (the detector sees a missing barrier in either order)
        r=0; { [ $p = bf16 ] || [ $k = swin_patch_merge ]; } && [ "$race_built" = 1 ] && r=1
        logs=("$work/$k.$p.log"); [ $r = 0 ] && logs+=("$work/$k.$p.reverse.log")
        if EMU_RACECHECK=$r "$prog" "$seed" > "$work/$k.$p.log" 2>&1 && tail -1 "$work/$k.$p.log" | grep -q '^OK' &&
           { [ $r = 1 ] || { EMU_FIBER_ORDER=reverse "$prog" "$seed" > "$work/$k.$p.reverse.log" 2>&1 &&
                             tail -1 "$work/$k.$p.reverse.log" | grep -q '^OK'; }; }; then
            ok "$k $p, $([ $r = 1 ] && echo race-checked || echo threads in both orders): max rel err $(max_errors "${logs[@]}")"
        else
            bad "$k $p"; grep -hE 'FAIL|error' "${logs[@]}" 2> /dev/null | head -10 | sed 's/^/     /'
        fi
    done
done
race_coverage
# a bad argument is refused with a message, not taken as seed 0
if "$E/swin_patch_merge_fp32" 12x > "$work/badarg.log" 2>&1; then bad "seed '12x' accepted"
elif grep -q "expected at most one argument, a decimal seed" "$work/badarg.log"; then ok "seed '12x' refused"
else bad "seed '12x': $(cat "$work/badarg.log")"; fi

# the checks bite: each mutant of a kernel header must make its fp32 check fail
if [ "${FOLDNORM_TEST_TIER:-full}" != check ]; then
    flags=$(make -s emu-flags) || { echo "FAIL make emu-flags"; exit 1; }
    compile=$(sed -n 1p <<< "$flags") link=$(sed -n 2p <<< "$flags")
    # mutant NAME FILE PROGRAM ORDER PYTHON-EXPRESSION [fp32|bf16 [RACE]] (s: the text ->
    # the mutated text; RACE: the check must abort with the race detector's report on
    # this memory: a barrier the emulator's schedule does not miss, so only the
    # detector sees it, and not in SAN=1, which has none)
    mutant() {
        local name=$1 file=$2 prog=$3 order=$4 expr=$5 race=${7:-} dir=$work/mutant_$1 defs=-DFOLDNORM_FP32
        [ "${6:-fp32}" = bf16 ] && defs=
        if [ -n "$race" ] && [ "$race_built" = 0 ]; then
            if [ "${FOLDNORM_SANITIZED:-0}" = 1 ]; then
                skip_part "mutant $name: only the race detector sees it, and the SAN=1 build has none"
            else
                bad "mutant $name: only the race detector sees it, and this plain build has none"
            fi
            return
        fi
        rm -rf "$dir"; mkdir -p "$dir"; cp -r build/emu/src/llmc "$dir/llmc"
        python3 -c "import sys; p = sys.argv[1]; s = open(p).read(); t = $expr
if t == s: sys.exit('mutation did not apply')
open(p, 'w').write(t)" "$dir/llmc/cuda/$file" || { bad "mutant $name no longer applies to $file"; return; }
        # -iquote: searched before every -I, so the check includes the mutant (and
        # the headers beside it, which it includes by their bare names)
        # shellcheck disable=SC2086
        if ! $compile -iquote "$dir/llmc" $defs -x c++ -c "build/emu/src/dev/cuda/$prog.cu" -o "$dir/check.o" > "$dir/build.log" 2>&1 ||
           ! g++ "$dir/check.o" $link -o "$dir/check" >> "$dir/build.log" 2>&1; then
            bad "mutant $name does not build"; tail -5 "$dir/build.log"; return
        fi
        # (the braces: a race aborts the run, and bash's "Aborted" goes to the log too)
        if { EMU_RACECHECK=$([ -n "$race" ] && echo 1 || echo 0) EMU_FIBER_ORDER=$order "$dir/check" "$seed"; } > "$dir/run.log" 2>&1; then
            bad "mutant $name passes the $prog check"
        elif [ -n "$race" ] && ! grep -q "^emulated CUDA error.*: race (.* on $race" "$dir/run.log"; then
            bad "mutant $name fails, but not with a race report on $race: $(grep -m1 -E 'FAIL|error' "$dir/run.log")"
        elif [ -n "$race" ]; then
            ok "mutant caught as a race: $name ($(grep -m1 'race (' "$dir/run.log" | cut -c1-240))"
        else
            ok "mutant caught: $name ($(grep -m1 -E 'FAIL|error' "$dir/run.log" | sed 's/  */ /g'))"
        fi
    }
    A=swin_window_attention
    mutant mask $A.cuh $A forward "s.replace('if (shift == 0) return 0.0f;', 'return 0.0f;')"
    mutant shift $A.cuh $A forward "s.replace('+ t / W + shift) % res', '+ t / W + res - shift) % res').replace('+ t % W + shift) % res', '+ t % W + res - shift) % res')"
    mutant rel_index $A.cuh $A forward "s.replace('(i / W - j / W + W - 1)', '(j / W - i / W + W - 1)')"
    mutant window_barrier $A.cuh $A forward "s.replace('__syncthreads(); // the previous window', '// the previous window')"
    mutant chunk_sum $A.cuh $A forward "s.replace('for (int c = 0; c < chunks; c++) sum +=', 'for (int c = 0; c < 1; c++) sum +=')"
    TC=swin_window_attention_tc
    mutant tc_mask $TC.cuh $A forward "s.replace('(region_s[i] == region_s[j] ? 0.0f : SWIN_MASK_VALUE)', '0.0f')" bf16
    mutant tc_rel_index $TC.cuh $A forward "s.replace('table_s[code_s[i] - code_s[j] + 2 * W * (W - 1)]', 'table_s[code_s[j] - code_s[i] + 2 * W * (W - 1)]')" bf16
    mutant tc_strip_barrier $TC.cuh $A forward "s.replace('__syncthreads(); // every strip', '// every strip')" bf16 \
        "dynamic shared memory 'tc_smem'"
    mutant tc_partial_first $TC.cuh $A forward "s.replace('(g == g0 ? 0.0f : partial[i * T + j])', '0.0f')" bf16
    mutant merge_parts swin_patch_merge.cuh swin_patch_merge forward "s.replace('(part & 1), xi = 2 * (t % res_out) + (part >> 1)', '(part >> 1), xi = 2 * (t % res_out) + (part & 1)')"
fi
echo "$fails failed"
suite_exit $fails
