#!/usr/bin/env bash
# foldcheck on ONNX models (issue 18): small real PyTorch models exported by
# torch.onnx.export (test/onnx_models.py: the GPT-2 reference, GPT-, BERT-,
# ViT-, OPT-125m- and OPT-350m-like stacks, the Swin reference with and without
# its centring ops, opsets 14 and 17, i.e.
# LayerNormalization and its decomposed form) give the verdicts worked out by hand and those of the
# built-in graph of the same architecture; the fold the verdict allows leaves
# the PyTorch outputs unchanged; ops the analysis does not model are reported
# by ONNX op type; malformed ONNX files are errors naming the file.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/onnx_graph
rm -rf "$work"; mkdir -p "$work"
PY=${PYTHON:-/usr/bin/python3}
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
[ -x bin/foldcheck ] || make -s foldcheck || { echo "FAIL: cannot build foldcheck"; exit 1; }

# exports, and the numerical check of the verdicts in PyTorch (1e-5 relative)
if $PY test/onnx_models.py "$work" > "$work/models.log" 2>&1; then
    ok "PyTorch fold checks: $(grep -c 'max rel diff' "$work/models.log") passed"
else
    bad "test/onnx_models.py:"; grep -v Warning "$work/models.log" | tail -8
    exit 1
fi
sed 's/^/     /' "$work/models.log" | grep 'max rel diff'

# foldcheck's last line on each export = the hand-derived line (expected.txt)
while IFS=$'\t' read -r name want; do
    got=$(bin/foldcheck "$work/$name.onnx" 2> "$work/$name.err" | tail -1)
    [ "$got" = "$want" ] && ok "foldcheck $name.onnx: $got" || bad "$name.onnx: '$got', expected '$want'"
done < "$work/expected.txt"
# ... and = the built-in graph of the same architecture (L=2, C=32, NH=2, V=64)
want=$(bin/foldcheck gpt2-d2c32h2v64t16 | tail -1)
got=$(bin/foldcheck "$work/gpt_ref.onnx" 2> /dev/null | tail -1)
[ "$got" = "$want" ] && ok "gpt_ref.onnx == built-in gpt2-d2c32h2v64t16: $got" || bad "gpt_ref: '$got' vs built-in '$want'"
# OPT: the built-ins cut to the exports' depth (opt-125m-d2, opt-350m-d2; widths do not enter the verdicts);
# Swin (2 stages): Swin-Tiny's first two stages (swin-tiny-s2, -centred)
# BERT (with its MLM head) and ViT: bert-base-d2, vit-tiny-d2
for pair in opt125:opt-125m-d2 opt350:opt-350m-d2 swin:swin-tiny-s2 swinc:swin-tiny-s2-centred \
            bert:bert-base-d2 vit:vit-tiny-d2; do
    want=$(bin/foldcheck "${pair#*:}" | tail -1)
    for opset in 17 14; do
        got=$(bin/foldcheck "$work/${pair%%:*}_o$opset.onnx" 2> /dev/null | tail -1)
        [ "$got" = "$want" ] && ok "${pair%%:*}_o$opset.onnx == built-in ${pair#*:}: $got" ||
            bad "${pair%%:*}_o$opset: '$got' vs built-in ${pair#*:} '$want'"
    done
done
for name in opt-350m-d0 opt-350m-d opt-125m-d2x opt-125m-d1001; do
    bin/foldcheck $name > /dev/null 2> "$work/builtin.err"
    [ $? -eq 1 ] && grep -q "$name: neither a file nor a built-in" "$work/builtin.err" && ok "bad built-in depth $name: error" ||
        bad "built-in $name: $(cat "$work/builtin.err")"
done
# the centring op x - mean(x) read by an LN, the residual add and the merge's slices
bin/foldcheck "$work/swinc_o17.onnx" > /dev/null 2> "$work/swinc.err"
grep -q "opaque (not modelled, treated as not zero-mean): Reshape x9 MatMul x8 Add x4 Softmax x3 Transpose x3 Mul x8$" "$work/swinc.err" &&
    ok "swinc_o17: opaque only inside attention (no LayerNormalization, Add or Slice)" ||
    bad "swinc_o17: $(cat "$work/swinc.err")"
bin/foldcheck "$work/opt350_o17.onnx" > "$work/opt350.out" 2> /dev/null
grep -qE "LN /layers.0/self_attn_layer_norm/ln/LayerNormalization +NOT foldable: input /layers.0/Add would be zero-mean with /project_in/MatMul centred, but that shifts what /layers.0/self_attn/[qkv]_proj/MatMul \(linear\) reads" "$work/opt350.out" &&
    ok "opt350_o17: the first post-LN blamed on project_in's stream also feeding q/k/v" ||
    bad "opt350_o17: $(grep layers.0/self_attn_layer_norm "$work/opt350.out")"

# node names are optional in ONNX: without them the output names stand in
$PY -c "
import sys, onnx
m = onnx.load(sys.argv[1])
for n in m.graph.node:
    n.name = ''
onnx.save(m, sys.argv[2])
" "$work/gpt_o17.onnx" "$work/noname.onnx"
got=$(bin/foldcheck "$work/noname.onnx" 2> /dev/null | tail -1)
[ "$got" = "$(grep ^gpt_o17 "$work/expected.txt" | cut -f2)" ] && ok "gpt_o17 without node names: $got" ||
    bad "gpt_o17 without node names: '$got'"

# the report: unknown ops named by type, the blame by ONNX node name
grep -q "opaque (not modelled, treated as not zero-mean): .*Erf x2" "$work/gpt_o17.err" &&
    ok "gpt_o17: the exact GELU's Erf reported as opaque" || bad "gpt_o17: no Erf in '$(cat "$work/gpt_o17.err")'"
bin/foldcheck "$work/bert_o17.onnx" > "$work/bert.out" 2> /dev/null
grep -q "LN /ln_attn.0/ln/LayerNormalization .*NOT foldable: .*broken at /ln_emb/ln/LayerNormalization (layernorm" "$work/bert.out" &&
    ok "bert_o17: first block LN blamed on the embedding LN, by ONNX node names" ||
    bad "bert_o17: reason: $(grep ln_attn.0 "$work/bert.out")"
grep -qE "cbwc layers \(3\): /word/Gather\(embedding\) [^ ]+\(param\) /ttype/Gather\(embedding\)$" "$work/bert.out" &&
    ok "bert_o17: cbwc set = word, token-type and position embeddings" || bad "bert_o17: $(grep '^cbwc' "$work/bert.out")"
# --emit writes graph text that reads back to the same verdicts
bin/foldcheck "$work/vit_o14.onnx" --emit > "$work/vit.txt" 2> /dev/null
got=$(bin/foldcheck "$work/vit.txt" | tail -1)
[ "$got" = "$(grep ^vit_o14 "$work/expected.txt" | cut -f2)" ] && ok "vit_o14 --emit reads back: $got" ||
    bad "vit_o14 --emit: '$got'"

# the opaque op in graph text: never zero-mean, and what it reads stays out of S
printf 'input x dim=4\nlinear a x out=4\nlinear b x out=4\nopaque o b dim=4 what=Erf\nadd r a o\nlayernorm n r\nlayernorm m b\n' > "$work/opaque.txt"
bin/foldcheck "$work/opaque.txt" > "$work/opaque.out" 2>&1
grep -q "LN n .*NOT foldable: input r is not zero-mean: broken at o (opaque: Erf)" "$work/opaque.out" &&
    grep -q "LN m .*NOT foldable: input b would be zero-mean with b centred, but that shifts what o (opaque) reads" "$work/opaque.out" &&
    ok "graph text: opaque blames itself by op type and blocks centring what it reads" ||
    bad "graph text opaque: $(cat "$work/opaque.out")"

# malformed files: exit status 1 and a message naming the file
$PY - "$work" <<'EOF' || bad "writing the bad ONNX files"
import sys, onnx
from onnx import helper, TensorProto
w = sys.argv[1]
good = open(f"{w}/gpt_ref.onnx", "rb").read()
open(f"{w}/trunc.onnx", "wb").write(good[: len(good) // 2 + 3])
open(f"{w}/text.onnx", "wb").write(b"input x dim=4\n")
open(f"{w}/empty.onnx", "wb").write(b"")
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
def model(nodes, inits=(), name="g"):
    g = helper.make_graph(nodes, name, [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          initializer=list(inits))
    return helper.make_model(g)
onnx.save(model([helper.make_node("Relu", ["nowhere"], ["y"], name="r")]), f"{w}/undefined.onnx")
onnx.save(model([helper.make_node("Relu", ["x"], ["y"], name="a"), helper.make_node("Relu", ["x"], ["y"], name="b")]),
          f"{w}/twice.onnx")
branch = helper.make_graph([helper.make_node("Identity", ["x"], ["z"])], "b", [],
                           [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
onnx.save(model([helper.make_node("If", ["x"], ["y"], name="cond", then_branch=branch, else_branch=branch)]),
          f"{w}/subgraph.onnx")
neg = helper.make_tensor("w", TensorProto.FLOAT, [4, 4], [0.0] * 16)
m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [neg])
m.graph.initializer[0].dims[1] = -4
open(f"{w}/negdim.onnx", "wb").write(m.SerializeToString())
onnx.save(model([]), f"{w}/nonodes.onnx")
EOF
expect_error() { # NAME PATTERN
    bin/foldcheck "$work/$1.onnx" > "$work/$1.out" 2> "$work/$1.bad"
    local rc=$?
    if [ $rc -eq 1 ] && grep -qE -- "$2" "$work/$1.bad"; then
        ok "bad $1.onnx: $(head -1 "$work/$1.bad")"
    else
        bad "bad $1.onnx: exit $rc, stderr: $(head -c 300 "$work/$1.bad")"
    fi
}
expect_error trunc "trunc.onnx: not an ONNX model"
expect_error text "text.onnx: (not an ONNX model|the model has no graph)"
expect_error empty "empty.onnx: the model has no graph"
expect_error undefined "undefined.onnx: node r \(Relu\) reads 'nowhere', which no earlier node"
expect_error twice "twice.onnx: value 'y' is defined twice"
expect_error subgraph "subgraph.onnx: node cond \(If\) holds a subgraph"
expect_error negdim "negdim.onnx: tensor 'w' has a negative dimension -4"
expect_error nonodes "nonodes.onnx: the model has no graph or an empty one"
expect_error missing "missing.onnx: "

# make SAN=1: no sanitizer report in any output
reports=$(grep -lE "runtime error|AddressSanitizer|LeakSanitizer" "$work"/* 2> /dev/null)
[ -z "$reports" ] && ok "no sanitizer reports" || bad "sanitizer reports in: $reports"

[ $fails -eq 0 ] && echo "onnx_graph: all passed" || echo "onnx_graph: $fails failed"
[ $fails -eq 0 ]
