#!/usr/bin/env bash
# Swin's CUDA kernels under emulation (issue 15; emulated: a logic check, not
# a device run, docs/cuda.md): dev/cuda/swin_window_attention.cu and
# dev/cuda/swin_patch_merge.cu, fp32 and bf16, against the CPU Swin's kernels
# (llmc/attention_bidir.c, llmc/swin_window.c) on random inputs from this
# run's seed, with each block's threads in thread order and in reverse. The
# full tier also builds mutants of the kernels (the shift mask dropped, the
# cyclic shift reversed, the relative index transposed, the barrier between
# two windows of a backward block removed, the table gradient summing one
# chunk of windows only, PatchMerging's parts swapped) and
# asserts that the checks fail on each.
# tier: check
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
make -s "${targets[@]}" > "$work/build.log" 2>&1 || { tail -30 "$work/build.log"; echo "FAIL make"; exit 1; }
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

# every check line of a run: its largest error per tensor
max_errors() {
    awk '/rel err/ { if (!($1 in m) || $4 + 0 > m[$1]) m[$1] = $4 + 0 }
         END { for (t in m) printf "%s %.1e, ", t, m[t] }' "$@" | sed 's/, $//'
}

for k in $kernels; do
    for p in fp32 bf16; do
        prog=$E/${k}_$p
        if "$prog" "$seed" > "$work/$k.$p.log" 2>&1 && tail -1 "$work/$k.$p.log" | grep -q '^OK' &&
           EMU_FIBER_ORDER=reverse "$prog" "$seed" > "$work/$k.$p.reverse.log" 2>&1 &&
           tail -1 "$work/$k.$p.reverse.log" | grep -q '^OK'; then
            ok "$k $p, threads in both orders: max rel err $(max_errors "$work/$k.$p.log" "$work/$k.$p.reverse.log")"
        else
            bad "$k $p"; grep -hE 'FAIL|error' "$work/$k.$p.log" "$work/$k.$p.reverse.log" | head -10 | sed 's/^/     /'
        fi
    done
done
# a bad argument is refused with a message, not taken as seed 0
if "$E/swin_patch_merge_fp32" 12x > "$work/badarg.log" 2>&1; then bad "seed '12x' accepted"
elif grep -q "expected at most one argument, a decimal seed" "$work/badarg.log"; then ok "seed '12x' refused"
else bad "seed '12x': $(cat "$work/badarg.log")"; fi

# the checks bite: each mutant of a kernel header must make its fp32 check fail
if [ "${FOLDNORM_TEST_TIER:-full}" != check ]; then
    flags=$(make -s emu-flags) || { echo "FAIL make emu-flags"; exit 1; }
    compile=$(sed -n 1p <<< "$flags") link=$(sed -n 2p <<< "$flags")
    # mutant NAME FILE PROGRAM ORDER PYTHON-EXPRESSION (s: the text -> the mutated text)
    mutant() {
        local name=$1 file=$2 prog=$3 order=$4 expr=$5 dir=$work/mutant_$1
        mkdir -p "$dir"; cp build/emu/src/llmc/"$file" "$dir/"
        python3 -c "import sys; p = sys.argv[1]; s = open(p).read(); t = $expr
if t == s: sys.exit('mutation did not apply')
open(p, 'w').write(t)" "$dir/$file" || { bad "mutant $name no longer applies to $file"; return; }
        # -iquote: searched before every -I, so the check includes the mutant
        if ! $compile -iquote "$dir" -DFOLDNORM_FP32 -x c++ -c "build/emu/src/dev/cuda/$prog.cu" -o "$dir/check.o" > "$dir/build.log" 2>&1 ||
           ! g++ "$dir/check.o" $link -o "$dir/check" >> "$dir/build.log" 2>&1; then
            bad "mutant $name does not build"; tail -5 "$dir/build.log"; return
        fi
        if EMU_FIBER_ORDER=$order "$dir/check" "$seed" > "$dir/run.log" 2>&1; then
            bad "mutant $name passes the $prog check"
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
    mutant merge_parts swin_patch_merge.cuh swin_patch_merge forward "s.replace('(part & 1), xi = 2 * (t % res_out) + (part >> 1)', '(part >> 1), xi = 2 * (t % res_out) + (part & 1)')"
fi
echo "$fails failed"
[ $fails -eq 0 ]
