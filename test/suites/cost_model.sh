#!/usr/bin/env bash
# The cost model of a training step (issue 27, dev/gpu/cost_model.py,
# docs/cuda.md "Cost model") held to what the kernels do: emulated runs of
# train_gpt2cu and train_vitcu (GPT-2 in ln, rms and cbwc, tc causal with
# tails and head sizes 64, 32 and 16, flash, cublas, forward-only; ViT tc,
# flash, cublas; Swin ln and cbwc with the centring ops), each with
# EMU_TRAFFIC=1, and every kernel's counted launches, bytes read and written,
# mma and cuBLAS GEMM FLOPs equal to the model's at that size, and its
# shared-memory bytes read and written (ldmatrix's included) where the model
# follows them (the tensor-core and fp32 flash attention kernels: issue 36). Mutants must
# fail, naming their kernel: the norm backward's per-lane load of rstd counted
# once a row, the tensor-core forward's mma per 16-key chunk halved, a
# GEMM's bias read dropped, the ldmatrix.x2 B fragment of an mma halved, the
# forward's ldmatrix.x4 B fragment pair (shared by a warp's two strips) halved. Then
# the report: issue 27's targets (d12 bf16 B=16 T=1024, tc: MFU >= 45 % in
# llm.c's 6 N + 6 L C T convention, cbwc <= 1.02 x ln), issue 36's before and
# after table (after >= before: the new roofs only add limits; the parts sum
# to the step; the targets line names the part that misses) and the device
# hook's measured-vs-predicted line, whose prediction must equal a hand
# computation.
# cores: 1
# sanitized: skip a SAN=1 build has no access hooks, so nothing is counted; the emulated programs run under the sanitizers in cuda_emu and cuda_vit_emu
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/cost_model
rm -rf "$work"; mkdir -p "$work"
PY=${PYTHON:-/usr/bin/python3}
export OMP_NUM_THREADS=1
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
make -s build/emu/train_gpt2cu build/emu/train_vitcu > "$work/build.log" 2>&1 ||
    { tail -30 "$work/build.log"; echo "FAIL make"; exit 1; }

# 1. every emulated run's counts = the model's
if $PY dev/gpu/cost_model.py check "$work/runs" > "$work/check.log" 2>&1; then
    ok "emulated counts = the model, kernel by kernel: $(tail -1 "$work/check.log")"
    echo "     $(tail -2 "$work/check.log" | head -1)"
    grep -E '^ok +[a-z]' "$work/check.log" | sed 's/^ok  */     /'
else
    bad "emulated counts differ from the model:"; sed 's/^/     /' "$work/check.log"
fi

# 2. mutants of the model, against the same logs: each must fail, naming KERNEL
mutant() {
    local name=$1 file=$2 from=$3 to=$4 kernel=$5 dir=$work/mutant_$1
    mkdir -p "$dir"
    cp -r dev/gpu/cost_model.py dev/gpu/cost "$dir/"
    if ! grep -qF -- "$from" "$dir/cost/$file"; then bad "mutant $name: '$from' not in $file"; return; fi
    $PY -c 'import sys; p, a, b = sys.argv[1:]; s = open(p).read(); open(p, "w").write(s.replace(a, b, 1))' \
        "$dir/cost/$file" "$from" "$to"
    if $PY "$dir/cost_model.py" check "$work/runs" --reuse > "$dir/check.log" 2>&1; then
        bad "mutant $name passed the check"
    elif grep -qF "FAIL $kernel" "$dir/check.log"; then
        ok "mutant $name fails: $(grep -m1 -F "FAIL $kernel" "$dir/check.log" | sed 's/^ *FAIL *//; s/  */ /g')"
    else
        bad "mutant $name failed without naming $kernel:"; sed 's/^/     /' "$dir/check.log" | head -10
    fi
}
mutant rstd_once_a_row kernels.py "stats = 32 * F32" "stats = F32" "norm_backward_kernel<"
mutant tc_chunk_mma_halved attention.py "ceil_div(seen, 16) * D // 2" "ceil_div(seen, 16) * D // 4" \
    "flash_attention_tc_forward_kernel<"
mutant gemm_bias_dropped kernels.py "(XB * m if bias else 0)" "0" "cublasLtMatmul"
mutant ldmatrix_b_fragment_halved attention.py "B_FRAGMENT = 2 * LDMATRIX_MATRIX" \
    "B_FRAGMENT = LDMATRIX_MATRIX" "flash_attention_tc_backward_kernel<"
mutant ldmatrix_b_pair_halved attention.py "B_PAIR_PER_MMA = 4 * LDMATRIX_MATRIX // 4" \
    "B_PAIR_PER_MMA = 4 * LDMATRIX_MATRIX // 8" "flash_attention_tc_forward_kernel<"

# 3. the report and the issue's targets
if $PY dev/gpu/cost_model.py report > "$work/report.md" 2>&1; then
    ln=$(grep -m1 '^- ln tc:' "$work/report.md")
    mfu=$(sed -n 's/.*MFU \([0-9.]*\) %.*/\1/p' <<< "$ln")
    ratio=$(sed -n 's/^cbwc \/ ln (tc): \([0-9.]*\).*/\1/p' "$work/report.md")
    if [ -n "$mfu" ] && [ -n "$ratio" ] && awk -v m="$mfu" -v r="$ratio" 'BEGIN { exit !(m >= 45 && r <= 1.02) }'; then
        ok "report: d12 ln tc MFU $mfu % (target >= 45), cbwc / ln $ratio (target <= 1.02)"
    else
        bad "report targets: MFU '${mfu:-none}' (>= 45), cbwc / ln '${ratio:-none}' (<= 1.02)"
    fi
    # issue 36: the before/after table; its step row, its parts' sum, the targets line
    step=$(grep -m1 '^| \*\*step\*\* |' "$work/report.md")
    before=$(awk -F'|' '{ gsub(/[ *]/, "", $4); print $4 }' <<< "$step")
    after=$(awk -F'|' '{ gsub(/[ *]/, "", $5); print $5 }' <<< "$step")
    sum=$(sed -n '/^| part | launches | before ms | after ms |/,/^| \*\*step/p' "$work/report.md" |
          awk -F'|' 'NR > 2 && $2 !~ /step/ { s += $5 } END { printf "%.2f", s }')
    if [ -n "$before" ] && [ -n "$after" ] &&
       awk -v b="$before" -v a="$after" -v s="$sum" 'BEGIN { exit !(a >= b && s - a <= 0.02 && a - s <= 0.02) }'; then
        ok "report: d12 ln tc step before $before ms, after $after ms (>= before; its parts sum to $sum)"
    else
        bad "report: before/after step '${before:-none}' / '${after:-none}', parts sum '${sum:-none}'"
    fi
    targets=$(grep -m1 "^issue 36's targets:" "$work/report.md")
    if [ -z "$targets" ]; then
        bad "report: no issue 36 targets line"
    elif grep -q MISSES <<< "$targets" && ! grep -q '^the part that misses:' "$work/report.md"; then
        bad "report: a target missed without naming the part: $targets"
    else
        ok "report: $targets"
        grep -m1 '^the part that misses:' "$work/report.md" | sed 's/^/     /'
    fi
    for section in "ViT-Tiny ln" "Swin-Tiny ln" "| 16384 | 1 |"; do
        grep -qF -- "$section" "$work/report.md" || bad "report: no '$section'"
    done
else
    bad "report:"; tail -5 "$work/report.md" | sed 's/^/     /'
fi

# 4. the device hook: a matmul at N=16384 IC=768 OC=3072, forward: 2 N IC OC FLOPs
#    on tensor cores (77.3 GFLOP / 790 TFLOP/s = 0.0979 ms, its 130 MB of
#    operands take less at 4 TB/s) plus 3 us for the launch: 0.101 ms
echo "RESULT matmul bf16 N=16384 IC=768 OC=3072 fwd 0.150 ms 515 TFLOP/s | bwd 0.300 ms 515 TFLOP/s (zeros)" > "$work/results.txt"
echo "RESULT matmul fp32 N=16384 IC=768 OC=3072 fwd 0.150 ms 515 TFLOP/s | bwd 0.300 ms 515 TFLOP/s (zeros)" >> "$work/results.txt"
want=$(awk 'BEGIN { printf "%.3f", (2 * 16384 * 768 * 3072 / 790e12 + 3e-6) * 1e3 }')
$PY dev/gpu/cost_model.py measured "$work/results.txt" > "$work/measured.log" 2>&1
if [ "$(wc -l < "$work/measured.log")" -eq 2 ] &&
   grep -qF "matmul N=16384 IC=768 OC=3072 fwd: measured 0.150 ms, predicted $want ms" "$work/measured.log"; then
    ok "measured vs predicted (check.sh's hook): $(head -1 "$work/measured.log"); the fp32 line left out"
else
    bad "measured vs predicted (want $want ms, two lines):"; sed 's/^/     /' "$work/measured.log"
fi
echo "$fails failed"
[ $fails -eq 0 ]
