#!/usr/bin/env bash
# CUDA emulation: does the emulated test bite? Builds test_gpt2fp32cu from a
# copy of the rewritten llmc/ sources with one mutation each and asserts that
# the test now FAILS on the given reference state (and passes unmutated):
#   sync:  the __syncthreads before norm_backward_kernel sums its warps' partials removed
#   index: flash attention's tile loads read q, k, v, dy one feature off (d -> (d + 1) % hs)
# usage: dev/cuda/emu/mutation_check.sh WORKDIR MODEL.bin STATE.bin   (exit 0: every mutant caught)
set -uo pipefail
cd "$(dirname "$0")/../../.."
work=$1 model=$2 state=$3
mkdir -p "$work"
flags=$(make -s emu-flags) || { echo "FAIL: make emu-flags"; exit 1; }
compile=$(sed -n 1p <<< "$flags") link=$(sed -n 2p <<< "$flags")
fails=0
# mutant NAME FILE PYTHON-EXPRESSION (s: the file's text -> the mutated text)
mutant() {
    local name=$1 file=$2 expr=$3 dir=$work/$1
    rm -rf "$dir"; mkdir -p "$dir"; cp -r build/emu/src/llmc "$dir/llmc"
    python3 -c "import sys; p = sys.argv[1]; s = open(p).read(); t = $expr
if t == s: sys.exit('mutation did not apply')
open(p, 'w').write(t)" "$dir/llmc/$file" || { echo "FAIL $name: the mutation no longer applies to $file"; fails=$((fails + 1)); return; }
    # -iquote: searched before every -I, so gpt2_cuda.cuh and all it includes come from the mutant
    if ! $compile -iquote "$dir/llmc" -DFOLDNORM_FP32 -x c++ -c build/emu/src/test/test_gpt2.cu -o "$dir/test.o" > "$dir/build.log" 2>&1 ||
       ! g++ "$dir/test.o" $link -o "$dir/test_gpt2fp32cu" >> "$dir/build.log" 2>&1; then
        echo "FAIL $name: the mutant does not build"; tail -5 "$dir/build.log"; fails=$((fails + 1)); return
    fi
    if "$dir/test_gpt2fp32cu" "$model" "$state" > "$dir/run.log" 2>&1; then
        echo "FAIL $name: the emulated test still passes with the mutation ($file)"; fails=$((fails + 1))
    else
        echo "ok   $name: mutant caught ($(grep -m1 -E 'FAIL|error' "$dir/run.log" | sed 's/  */ /g'))"
    fi
}
mutant sync norm.cuh "s.replace('    __syncthreads();\n    // the warps\' sums in warp order', '    // the warps\' sums in warp order')"
mutant index flash_attention.cuh "s.replace('to_float(src[(size_t)r * stride + d])', 'to_float(src[(size_t)r * stride + (d + 1) % hs])')"
[ $fails -eq 0 ]
