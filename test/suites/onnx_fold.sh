#!/usr/bin/env bash
# bin/fold on ONNX models (issue 34): real module definitions exported by
# torch.onnx.export (test/onnx_fold_models.py: Phi-, BERT-, OPT-125m-shaped
# models with fixed and symbolic batch / sequence axes, OPT-350m-shaped, an LN
# on the network input, ConvNeXt's LayerNorm2d written out, and torchvision's
# VisionTransformer, SwinTransformer and ConvNeXt classes) are
# folded and run, original and fold, in ONNX Runtime on the same inputs
# (test/onnx_fold_ort.js); foldcheck's verdicts on the full torchvision
# swin_t and convnext_tiny count every norm in the file; inexact folds and bad
# files are refused without an output file.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/onnx_fold
mkdir -p "$work"  # the exports are kept between runs with the same work dir
PY=${PYTHON:-/usr/bin/python3}
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
[ -x bin/fold ] && [ -x bin/foldcheck ] || make -s fold foldcheck || { echo "FAIL: cannot build fold"; exit 1; }
[ -f data/npm_ort/node_modules/onnxruntime-node/package.json ] ||
    { echo "FAIL: onnxruntime-node missing: make deps (scripts/deps/onnx.sh)"; exit 1; }

if ! $PY test/onnx_fold_models.py "$work" --zoo > "$work/models.log" 2>&1; then
    bad "test/onnx_fold_models.py:"; grep -v Warn "$work/models.log" | tail -8; exit 1
fi
grep "exported in" "$work/models.log" | sed 's/^/     /'
. test/suite_outcome.sh
grep -q "^SKIP" "$work/models.txt" && skip_part "torchvision models: $(grep ^SKIP "$work/models.txt" | cut -f2)"

# Tolerance: the fold changes the arithmetic only by rounding (centred fp32
# weights, an RMS norm summing other terms than LN's), each ~1e-7 relative
# (fp32's unit roundoff 6e-8), carried through at most a dozen layers: the
# outputs must agree within 1e-5 of the largest output magnitude (seen: <= 1e-6).
# The negative control (the norms replaced without centring, --no-centre)
# must differ by more than 1e-3, 100x the tolerance (seen: 0.2 and more).
tol=1e-5
while IFS=$'\t' read -r name spec; do
    [ "$name" = SKIP ] && continue
    [ "$name" = swin_t ] || [ "$name" = convnext_tiny ] && ort_spec="" || ort_spec=$spec
    if ! bin/fold "$work/$name.onnx" "$work/${name}_f.onnx" > "$work/$name.fold" 2>&1; then
        bad "fold $name: $(cat "$work/$name.fold")"; continue
    fi
    [ -n "$ort_spec" ] || continue
    node test/onnx_fold_ort.js "$work/$name.onnx" "$work/${name}_f.onnx" 11 $spec > "$work/$name.ort" 2>&1
    d=$(sed -n 's/^output out: rel_diff \([^ ]*\) .*/\1/p' "$work/$name.ort")
    if awk -v d="$d" -v t=$tol 'BEGIN { exit !(d != "" && d + 0 == d && d <= t) }'; then
        ok "$name: $(sed 's/.*: \([0-9]*\/[0-9]* norms foldable\).*/\1/' "$work/$name.fold"), ORT rel diff $d <= $tol"
    else
        bad "$name: ORT rel diff '$d' (tolerance $tol): $(cat "$work/$name.ort")"
    fi
done < "$work/models.txt"

# RMSNormalization (opset 23) instead of the primitive ops: ORT runs it, same outputs
bin/fold "$work/phi.onnx" "$work/phi_23.onnx" --opset 23 > /dev/null &&
    node test/onnx_fold_ort.js "$work/phi.onnx" "$work/phi_23.onnx" 11 idx:int64:2x16:64 > "$work/phi_23.ort" 2>&1
d=$(sed -n 's/^output out: rel_diff \([^ ]*\) .*/\1/p' "$work/phi_23.ort")
awk -v d="$d" -v t=$tol 'BEGIN { exit !(d != "" && d + 0 == d && d <= t) }' &&
    ok "phi --opset 23 (RMSNormalization): ORT rel diff $d" || bad "phi --opset 23: '$d' $(cat "$work/phi_23.ort")"

# ONNX Runtime fuses every RMS norm the fold wrote (OPT-125m: 5 of 5, no LayerNormalization left)
OPTIMIZED_OUT="$work/opt125_f.opt.onnx" node test/onnx_fold_ort.js "$work/opt125.onnx" "$work/opt125_f.onnx" 11 \
    idx:int64:2x16:64 > /dev/null 2>&1
fused=$($PY -c "
import sys, onnx
ops = [n.op_type for n in onnx.load(sys.argv[1]).graph.node]
print(ops.count('SimplifiedLayerNormalization'), ops.count('LayerNormalization'))" "$work/opt125_f.opt.onnx" 2>&1)
[ "$fused" = "5 0" ] && ok "opt125 fold in ORT: 5 SimplifiedLayerNormalization, 0 LayerNormalization" ||
    bad "opt125 fold in ORT: SimplifiedLayerNormalization, LayerNormalization = '$fused', expected '5 0'"

# negative control: the same rewrite without the centring must be caught
for pair in phi:idx:int64:2x16:64 tv_vit:image:float:1x3x32x32; do
    name=${pair%%:*}
    [ -f "$work/$name.onnx" ] || continue
    bin/fold "$work/$name.onnx" "$work/${name}_nc.onnx" --no-centre > /dev/null &&
        node test/onnx_fold_ort.js "$work/$name.onnx" "$work/${name}_nc.onnx" 11 "${pair#*:}" > "$work/${name}_nc.ort" 2>&1
    d=$(sed -n 's/^output out: rel_diff \([^ ]*\) .*/\1/p' "$work/${name}_nc.ort")
    awk -v d="$d" 'BEGIN { exit !(d != "" && d + 0 == d && d > 1e-3) }' &&
        ok "negative control: $name folded without centring differs by $d > 1e-3" ||
        bad "negative control $name: '$d' (must exceed 1e-3)"
done

# nothing foldable: the fold is the same model (protobuf equality after the rewrite)
$PY -c "
import sys, onnx
a, b = onnx.load(sys.argv[1]), onnx.load(sys.argv[2])
sys.exit(0 if a == b else 1)" "$work/ln_only.onnx" "$work/ln_only_f.onnx" &&
    ok "ln_only (0/1 foldable): the folded file is the input model" || bad "ln_only: the fold changed the model"

# symbolic batch and sequence axes: the same verdicts as the fixed-shape exports
for name in phi bert opt125; do
    a=$(bin/foldcheck "$work/$name.onnx" 2> /dev/null | tail -1)
    b=$(bin/foldcheck "$work/${name}_dyn.onnx" 2> /dev/null | tail -1)
    [ "$a" = "$b" ] && ok "${name}_dyn (symbolic B, T) == $name: $b" || bad "${name}_dyn: '$b' vs $name '$a'"
done

# a decomposed norm the reader cannot follow is still counted, as not analysed
got=$(bin/foldcheck "$work/ln2d_gf.onnx" 2> "$work/ln2d_gf.err" | tail -1)
[ "$got" = "foldable: 0/1 LNs, cbwc layers: 0" ] && grep -q "1 norm not analysed" "$work/ln2d_gf.err" &&
    ok "ln2d_gf (gamma before the division): counted, not analysed: $got" || bad "ln2d_gf: '$got' $(cat "$work/ln2d_gf.err")"
bin/foldcheck "$work/ln2d.onnx" 2> /dev/null | grep -q "^foldable: 1/1 LNs" &&
    ok "ln2d (mean and variance over axis 1 of NCHW): 1/1 foldable" || bad "ln2d: $(bin/foldcheck "$work/ln2d.onnx" 2>&1 | tail -1)"

# the full torchvision models: every norm in the file in the denominator
if [ -f "$work/swin_t.onnx" ]; then
    for name in swin_t convnext_tiny; do
        n=$($PY -c "
import sys, onnx
print(sum(n.op_type == 'LayerNormalization' for n in onnx.load(sys.argv[1], load_external_data=False).graph.node))" "$work/$name.onnx")
        bin/foldcheck "$work/$name.onnx" > "$work/$name.fc" 2> /dev/null
        got=$(tail -1 "$work/$name.fc")
        [[ "$got" == "foldable: "*"/$n LNs,"* ]] && ok "$name: $n LayerNormalization ops in the file, all counted: $got" ||
            bad "$name: $n norms in the file, foldcheck says '$got'"
    done
    want=$(bin/foldcheck swin-tiny | tail -1)
    [ "$(tail -1 "$work/swin_t.fc")" = "$want" ] && ok "swin_t == built-in swin-tiny: $want" ||
        bad "swin_t: '$(tail -1 "$work/swin_t.fc")' vs built-in swin-tiny '$want'"
    k=$(grep -c "NOT foldable: input .*block.0/Conv (opaque) is not zero-mean: a grouped or depthwise Conv" "$work/convnext_tiny.fc")
    [ "$k" -eq 18 ] && ok "convnext_tiny: the 18 block LNs after a depthwise 7x7 Conv NOT foldable, with that reason" ||
        bad "convnext_tiny: $k block LNs blamed on the depthwise Conv, expected 18"
fi

# refusals: bad files name the problem, and leave no output
head -c 5000 "$work/phi.onnx" > "$work/trunc.onnx"
$PY -c "
import sys, onnx
m = onnx.load(sys.argv[1])
onnx.save(m, sys.argv[2], save_as_external_data=True, all_tensors_to_one_file=True, location='ext.bin', size_threshold=0)" \
    "$work/phi.onnx" "$work/ext.onnx"
rm -f "$work/ext.bin"
for case in "trunc:not an ONNX model" "ext:keeps its data in an external file (ext.bin)"; do
    name=${case%%:*}; want=${case#*:}
    rm -f "$work/${name}_out.onnx"
    bin/fold "$work/$name.onnx" "$work/${name}_out.onnx" > /dev/null 2> "$work/$name.err"; rc=$?
    if [ $rc -ne 0 ] && grep -q "$want" "$work/$name.err" && [ ! -e "$work/${name}_out.onnx" ] &&
       ! ls "$work/${name}_out.onnx".* > /dev/null 2>&1; then
        ok "$name: refused (exit $rc), no output: $(cat "$work/$name.err")"
    else
        bad "$name: exit $rc, '$(cat "$work/$name.err")', output $(ls "$work/${name}_out.onnx"* 2> /dev/null)"
    fi
done

[ $fails -eq 0 ] && echo "onnx_fold: all passed" || echo "onnx_fold: $fails failed"
suite_exit $fails
