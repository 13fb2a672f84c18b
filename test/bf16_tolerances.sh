#!/usr/bin/env bash
# Measures the emulated bf16 CUDA tests' errors over many seeds, to set the
# tolerance tables of test/test_gpt2.cu, test_vit.cu and test_swin.cu from a
# distribution instead of a few seeds. For each seed it writes the suites'
# reference states (the shapes of test/suites/cuda_emu.sh and cuda_vit_emu.sh,
# with their curves and equivalence runs, and dev/gpu/make_states.sh's GPT-2
# odd shape), runs the bf16 test binaries with every tolerance at 1 (-r 1 -l 1:
# nothing fails, every error is printed) and keeps each check's error. The
# summary gives per family and check kind (a gradient by its tensor kind,
# "cbwc X" folded into X, as the tables do) the largest error over all seeds
# and configs, the seed and config where it fell, and the 99th percentile.
#   test/bf16_tolerances.sh [-n SEEDS (60)] [-s FIRST (1)] [-o DIR] [gpt2 vit swin]
# Needs make emu. Under nice it takes ~20 s a seed for all three families.
set -uo pipefail
cd "$(dirname "$0")/.."
n=60 first=1 out=out/bf16_tolerances
while getopts "n:s:o:h" opt; do
    case $opt in
    n) n=$OPTARG ;; s) first=$OPTARG ;; o) out=$OPTARG ;;
    h) sed -n 2,14p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
families=${*:-gpt2 vit swin}
PY=${PYTHON:-/usr/bin/python3}
E=build/emu
export OMP_NUM_THREADS=1 EMU_RACECHECK=0 # the errors need no race detector (1.5-2.5x a run)
mkdir -p "$out/work"
errors=$out/errors.tsv
: > "$errors"
# run FAMILY CONFIG SEED REFERENCE_ARGS -- TEST_ARGS: one state, one bf16 test, its errors kept
run() {
    local family=$1 config=$2 seed=$3; shift 3
    local ref_args=() test_args=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do ref_args+=("$1"); shift; done
    shift
    test_args=("$@")
    local w=$out/work/$family.$config
    $PY "dev/reference/$family.py" --seed "$seed" --model "$w.bin" --state "$w.state" "${ref_args[@]}" \
        > "$w.ref.log" 2>&1 || { echo "reference failed: $family $config seed $seed" >&2; return; }
    "$E/test_${family}cu" "$w.bin" "$w.state" "${test_args[@]}" -r 1 -l 1 > "$w.log" 2>&1
    awk -v f="$family" -v c="$config" -v s="$seed" '
        /\(tol / { line = $0; sub(/^ +/, "", line)
                   if (match(line, / +[-+0-9.e]+ +\(tol /)) {
                       name = substr(line, 1, RSTART - 1); split(substr(line, RSTART), v, " ")
                       sub(/^cbwc /, "", name); k = split(name, parts, "."); kind = parts[k]
                       if (name ~ /^grad / && kind !~ /^grad /) kind = "grad " kind
                       printf "%s\t%s\t%s\t%s\t%s\n", f, kind, v[1], s, c } }' "$w.log" >> "$errors"
}
gpt2_small=(--B 2 --T 16 --steps 3)
gpt2_odd=(--L 3 --C 48 --NH 6 --V 301 --Vp 384 --maxT 40 --B 2 --T 24 --init gpt2 --steps 3 --lr 3e-3)
# dev/gpu/make_states.sh's odd shape (the device's states): head size 16, 5 steps
gpt2_device=(--L 3 --C 96 --NH 6 --V 301 --Vp 384 --maxT 40 --B 2 --T 24 --init gpt2 --steps 5 --lr 3e-3)
vit_odd=(--steps 4 --image-size 12 --image-channels 3 --patch-size 3 --channels 32 --num-heads 2
         --num-layers 3 --mlp-ratio 2 --num-classes 5 --B 5 --smoothing 0 --lr 3e-3)
swin_a=(--image-size 16 --patch-size 2 --image-channels 2 --embed-dim 16 --depths 2,2 --heads 2,4 --window 4 --B 2 --steps 4)
swin_b=(--image-size 24 --patch-size 2 --image-channels 3 --embed-dim 8 --depths 2,2,2 --heads 2,2,4 --window 3
        --mlp-ratio 4 --B 3 --num-classes 4 --steps 3 --lr 3e-3 --centre-ops 1)
t0=$SECONDS
for ((k = 0; k < n; k++)); do
    s=$((first + k))
    for family in $families; do
        case $family in
        gpt2)
            for mode in ln rms cbwc; do
                extra=(--curve 5 --seed "$s"); [ $mode = ln ] && extra+=(--equivalence 8)
                run gpt2 ${mode}_small "$s" --mode $mode "${gpt2_small[@]}" -- "${extra[@]}"
                run gpt2 ${mode}_odd "$s" --mode $mode "${gpt2_odd[@]}" --
                run gpt2 ${mode}_device "$s" --mode $mode "${gpt2_device[@]}" --
            done ;;
        vit)
            for mode in ln rms cbwc; do
                extra=(--curve 5 --seed "$s"); [ $mode = ln ] && extra+=(--equivalence 8)
                run vit ${mode}_small "$s" --mode $mode --steps 4 -- "${extra[@]}"
                run vit ${mode}_odd "$s" --mode $mode "${vit_odd[@]}" --
            done ;;
        swin)
            for mode in ln rms cbwc; do run swin ${mode}_a "$s" --mode $mode "${swin_a[@]}" --; done
            run swin cbwc_ap "$s" --mode cbwc "${swin_a[@]}" --paper-variant 1 --
            run swin ln_b "$s" --mode ln "${swin_b[@]}" -- --equivalence 8 ;;
        *) echo "error: unknown family '$family' (gpt2, vit or swin)" >&2; exit 2 ;;
        esac
    done
    echo "seed $s done ($((SECONDS - t0)) s)"
done
summary=$out/summary.tsv
sort -t$'\t' -k1,1 -k2,2 -k3,3g "$errors" | awk -F'\t' '
    { key = $1 "\t" $2; n[key]++; v[key, n[key]] = $3; last[key] = $4 "\t" $5 }
    END { for (key in n) { m = n[key]; p = v[key, int(0.99 * (m - 1)) + 1]
          printf "%s\t%d\t%s\t%s\t%s\n", key, m, v[key, m], p, last[key] } }' | sort > "$summary"
echo "family	kind	samples	max	p99	seed	config" | cat - "$summary" | column -t -s$'\t'
