#!/usr/bin/env bash
# ONNX export of GPT-2 (issue 14): bin/onnx_export writes ln, rms, cbwc and
# folded models (from bin/fold and --fold) of the PyTorch reference; ONNX's
# checker (python3-onnx, full check with shape inference) accepts each graph;
# ONNX Runtime (onnxruntime-node, test/onnx_ort.js) runs it and its logits
# equal the CPU forward of the model file (bin/test_onnx_export, 1e-5
# relative: the same fp32 math summed in another order); the folded graph's
# logits equal the ln model's; ORT runs the folded graph's RMSNorms as its
# fused SimplifiedLayerNormalization; foldcheck reads the ln export back.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/onnx_export
rm -rf "$work"; mkdir -p "$work"
PY=${PYTHON:-/usr/bin/python3}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
for p in onnx_export test_onnx_export fold foldcheck; do
    [ -x "bin/$p" ] || make -s "$p" || { echo "FAIL: cannot build $p"; exit 1; }
done
command -v node > /dev/null || { echo "FAIL: node not found (scripts/deps/data.txt: make deps)"; exit 1; }
[ -f data/npm_ort/node_modules/onnxruntime-node/package.json ] || scripts/deps/onnx.sh ||
    { echo "FAIL: cannot install onnxruntime-node (scripts/deps/onnx.sh)"; exit 1; }

L=2 C=64 NH=4 V=250 Vp=256 maxT=64 B=2 T=16 tol=1e-5
for mode in ln rms cbwc; do
    $PY dev/reference/gpt2.py --mode $mode --seed 5 --L $L --C $C --NH $NH --V $V --Vp $Vp \
        --maxT $maxT --B 1 --T 8 --model "$work/$mode.bin" --state "$work/${mode}_state.bin" > /dev/null ||
        { echo "FAIL: reference model ($mode)"; exit 1; }
done
bin/fold "$work/ln.bin" "$work/folded.bin" > /dev/null || { echo "FAIL: bin/fold"; exit 1; }

# name MODEL [export flags]: export, check, run in ORT, compare with the CPU forward
check_export() {
    local name=$1 model=$2; shift 2
    if ! bin/onnx_export -e "$model" "$@" "$work/$name.onnx" > "$work/$name.log" 2>&1; then
        bad "$name: onnx_export: $(tail -1 "$work/$name.log")"; return
    fi
    if ! node test/onnx_ort.js "$work/$name.onnx" $B $T $V 7 "$work/$name" > "$work/$name.ort" 2>&1; then
        bad "$name: ONNX Runtime: $(tail -3 "$work/$name.ort")"; return
    fi
    local fold_flag=""
    for f in "$@"; do [ "$f" = --fold ] && fold_flag=--fold; done
    if bin/test_onnx_export $fold_flag -rt $tol -b $B -t $T "$model" "$work/$name.tokens.i32" \
        "$work/$name.logits.f32" > "$work/$name.cmp" 2>&1; then
        ok "$name: ORT logits == CPU forward: $(grep -o '[0-9.e+-]*  (tol' "$work/$name.cmp" | cut -d' ' -f1) (tol $tol)"
    else
        bad "$name: $(cat "$work/$name.cmp")"
    fi
}
check_export ln "$work/ln.bin"
check_export rms "$work/rms.bin"
check_export cbwc "$work/cbwc.bin"
check_export folded "$work/folded.bin"
check_export ln_fold "$work/ln.bin" --fold
check_export cbwc_fold "$work/cbwc.bin" --fold

# ONNX's checker (full: with shape inference) accepts every graph
if $PY -c "
import sys, onnx
for path in sys.argv[1:]:
    onnx.checker.check_model(onnx.load(path), full_check=True)
" "$work"/{ln,rms,cbwc,folded,ln_fold,cbwc_fold}.onnx > "$work/checker.log" 2>&1; then
    ok "onnx.checker (python3-onnx $($PY -c 'import onnx; print(onnx.__version__)')) accepts the 6 graphs"
else
    bad "onnx.checker: $(tail -2 "$work/checker.log")"
fi

# the folded graphs compute the unfolded model's logits (same tokens: same seed)
for pair in folded:ln ln_fold:ln cbwc_fold:cbwc; do
    name=${pair%:*} base=${pair#*:}
    bin/test_onnx_export -rt $tol -b $B -t $T "$work/$base.bin" "$work/$name.tokens.i32" "$work/$name.logits.f32" \
        > "$work/$name.vs" 2>&1 && ok "$name: ORT logits == the $base model's CPU logits" ||
        bad "$name vs $base: $(cat "$work/$name.vs")"
done

# which kernels ORT runs (its optimized graph): LayerNormalization for ln, its
# fused SimplifiedLayerNormalization for every RMSNorm of the folded graph
$PY - "$work" $((2 * L + 1)) <<'EOF' && ok "ORT kernels: ln 2L+1 LayerNormalization, folded 2L+1 SimplifiedLayerNormalization" || bad "ORT kernels"
import collections, sys, onnx
work, n = sys.argv[1], int(sys.argv[2])
ok = True
for name, op in (("ln", "LayerNormalization"), ("folded", "SimplifiedLayerNormalization")):
    ops = collections.Counter(node.op_type for node in onnx.load(f"{work}/{name}.opt.onnx").graph.node)
    print(f"     {name}: {ops[op]} {op}, {ops['LayerNormalization']} LayerNormalization")
    ok = ok and ops[op] == n and (op == "LayerNormalization" or ops["LayerNormalization"] == 0)
sys.exit(0 if ok else 1)
EOF

# foldcheck reads the ln export back: the verdicts of the built-in GPT-2 graph
want=$(bin/foldcheck gpt2-d${L}c${C}h${NH}v${V}t${maxT} | tail -1)
got=$(bin/foldcheck "$work/ln.onnx" 2> /dev/null | tail -1)
[ "$got" = "$want" ] && ok "foldcheck ln.onnx == built-in gpt2-d${L}c${C}h${NH}v${V}t${maxT}: $got" ||
    bad "foldcheck ln.onnx: '$got', built-in '$want'"

# bad input: exit status 1 and a message naming the argument
expect_error() { # NAME PATTERN ARGS...
    local name=$1 pattern=$2; shift 2
    bin/onnx_export "$@" > "$work/bad_$name.out" 2> "$work/bad_$name.err"
    local rc=$?
    [ $rc -eq 1 ] && grep -qE -- "$pattern" "$work/bad_$name.err" && ok "bad $name: $(head -1 "$work/bad_$name.err")" ||
        bad "bad $name: exit $rc, stderr: $(head -c 300 "$work/bad_$name.err")"
}
expect_error no_model "-e: a model file or descriptor is needed" "$work/x.onnx"
expect_error missing "nope.bin" -e "$work/nope.bin" "$work/x.onnx"
expect_error not_model "ln_state.bin" -e "$work/ln_state.bin" "$work/x.onnx"
expect_error mode_file "-N applies to a random model" -e "$work/ln.bin" -N rms "$work/x.onnx"
expect_error fold_rms "norm mode is 'rms'" -e "$work/rms.bin" --fold "$work/x.onnx"
expect_error no_dir "no_such_dir" -e "$work/ln.bin" "$work/no_such_dir/x.onnx"
[ ! -e "$work/x.onnx" ] && ok "no output file after the errors" || bad "an output file was left behind"

# make SAN=1: no sanitizer report in any output
reports=$(grep -lE "runtime error|AddressSanitizer|LeakSanitizer" "$work"/* 2> /dev/null)
[ -z "$reports" ] && ok "no sanitizer reports" || bad "sanitizer reports in: $reports"

[ $fails -eq 0 ] && echo "onnx_export: all passed" || echo "onnx_export: $fails failed"
[ $fails -eq 0 ]
