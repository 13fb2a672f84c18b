#!/usr/bin/env bash
# The zero-mean analysis (foldcheck): built-in GPT-2/ViT/Swin verdicts,
# adversarial graphs, the trainer's cbwc set, soundness by execution on
# random graphs, the example graphs, and bad graph files / arguments.
# tier: check
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/graph_analysis
mkdir -p "$work"
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
echo "graph_analysis: seed $seed"
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

bin/test_graph || fails=$((fails + 1))
bin/test_graph_soundness $((seed + 11)) 2000 || fails=$((fails + 1))

# last_line NET EXPECTED: foldcheck's summary line. The expected counts are
# worked out by hand (docs/math.md section 3), not taken from the tool:
#   GPT-2 d12: 2L+1 = 25 LNs, S = wte, wpe, 12 attn c_proj, 12 mlp c_proj = 26
#   ViT-Tiny:  2*12+1 = 25 LNs, S = patch conv, cls, pos, 12 proj, 12 fc2 = 27
#   Swin-Tiny: 1 patch norm + 2*(2+2+6+2) block LNs + 3 merging + final = 29;
#              foldable (exact, docs/graph-format.md): the patch norm, stage
#              4's 2*2 block LNs and the final LN = 6, S = patch conv, the
#              reduction into stage 4, stage 4's 2*2 branch outputs = 6;
#              stages 1-3 feed a PatchMerging concat, which a shift breaks
#   centred:   all 29; S = patch conv + 3 reductions + the 24 branch outputs,
#              less the last fc2 of stages 1-3 (it reaches only the centring
#              op before the merge) = 25
last_line() {
    local got
    got=$(bin/foldcheck "$1" | tail -1)
    [ "$got" = "$2" ] && ok "foldcheck $1: $got" || bad "foldcheck $1: '$got', expected '$2'"
}
last_line gpt2-d12 "foldable: 25/25 LNs, cbwc layers: 26"
last_line gpt2-d2c64h4v256t64 "foldable: 5/5 LNs, cbwc layers: 6"
last_line vit-tiny "foldable: 25/25 LNs, cbwc layers: 27"
last_line swin-tiny "foldable: 6/29 LNs, cbwc layers: 6"
last_line swin-tiny-centred "foldable: 29/29 LNs, cbwc layers: 25"
# the paper's other architectures (by hand, from where the norms sit):
#   BERT post-LN: only the embedding LN (word + position + token type = 3 layers);
#                 26 LNs = embedding + 2 per layer + the MLM head's (50 for large)
#   OPT-125m pre-LN: as GPT-2, S = embed_tokens, positions, 12 out_proj, 12 fc2
#   OPT-350m post-LN: 0/48; project_in + positions would make the first LN's
#                 input zero-mean but their shift reaches layer 0's q/k/v
#   Phi-2: 32 input LNs + final; S = embedding + 32 dense + 32 fc2 = 65
last_line bert-base "foldable: 1/26 LNs, cbwc layers: 3"
last_line bert-large "foldable: 1/50 LNs, cbwc layers: 3"
last_line opt-125m "foldable: 25/25 LNs, cbwc layers: 26"
last_line opt-350m "foldable: 0/48 LNs, cbwc layers: 0"
last_line phi-2 "foldable: 33/33 LNs, cbwc layers: 65"
bin/foldcheck swin-tiny > "$work/swin.out"; bin/foldcheck gpt2-d12 > "$work/gpt2.out"  # (grep -q on a pipe + pipefail: SIGPIPE)
grep -q "LN layers.0.downsample.norm .*NOT foldable: .*broken at patch_embed.norm" "$work/swin.out" &&
    ok "swin-tiny: first merging LN blamed on the patch norm" || bad "swin-tiny: merging LN reason"
grep -q "LN layers.2.blocks.0.norm1 .*NOT foldable: .*layers.1.downsample.reduction centred, but that shifts what layers.2.downsample.cat (concat) reads" "$work/swin.out" &&
    ok "swin-tiny: stage-3 LN blamed on the next merge's concat" || bad "swin-tiny: stage-3 LN reason"
grep -q "note: weight wte is centred for wte but lm_head reads it uncentred" "$work/gpt2.out" &&
    ok "gpt2-d12: tied head noted" || bad "gpt2-d12: tied head note missing"

# the example graphs parse and analyse; the emitted built-ins are in sync
for f in docs/graphs/*.txt; do
    bin/foldcheck "$f" > "$work/ex.out" 2>&1 && tail -1 "$work/ex.out" | grep -q '^foldable: ' &&
        ok "example $f: $(tail -1 "$work/ex.out")" || bad "example $f: $(tail -2 "$work/ex.out")"
done
for net in gpt2-d12 vit-tiny swin-tiny; do
    bin/foldcheck $net --emit | cmp -s - docs/graphs/$net.txt && ok "docs/graphs/$net.txt == foldcheck $net --emit" ||
        bad "docs/graphs/$net.txt is stale: regenerate with bin/foldcheck $net --emit"
done

# a model file: its config's graph
/usr/bin/python3 dev/reference/gpt2.py --mode ln --seed $((seed % 100000)) --L 3 --C 32 --NH 2 --V 256 --Vp 256 \
    --maxT 16 --B 1 --T 8 --model "$work/m.bin" --state "$work/m_state.bin" > /dev/null || bad "reference model"
got=$(bin/foldcheck "$work/m.bin" | tail -1)
[ "$got" = "foldable: 7/7 LNs, cbwc layers: 8" ] && ok "model file L=3: $got" || bad "model file: $got"

# bad input: exit status 1 and a message naming the file (and line)
expect_error() { # NAME PATTERN ARGS...
    local name=$1 pattern=$2; shift 2
    bin/foldcheck "$@" > "$work/$name.out" 2> "$work/$name.err"
    local rc=$?
    if [ $rc -eq 1 ] && grep -qE -- "$pattern" "$work/$name.err"; then
        ok "bad $name: $(head -1 "$work/$name.err")"
    else
        bad "bad $name: exit $rc, stderr: $(head -c 300 "$work/$name.err")"
    fi
}
printf 'input x dim=4\nlinear a b out=4\nlinear b a out=4\nlayernorm n a\n' > "$work/cycle.txt"
printf 'input x dim=4\nsoftplus s x\n' > "$work/unknown.txt"
printf 'input x dim=4\nlayernorm n y\n' > "$work/dangling.txt"
printf 'input x dim=4\nlinear a x out=8\nadd s x a\n' > "$work/shapes.txt"
printf 'input x dim=4\nlinear a x in=3 out=8\n' > "$work/shapes_in.txt"
printf '\x00\x01\x02binary' > "$work/binary.txt"
: > "$work/empty.txt"
expect_error cycle "cycle.txt:[0-9]+: cycle" "$work/cycle.txt"
expect_error unknown_op "unknown.txt:2: unknown op 'softplus'" "$work/unknown.txt"
expect_error dangling "dangling.txt:2: n: input 'y' is not defined" "$work/dangling.txt"
expect_error shapes "shapes.txt:3: s: inputs x \(width 4\) and a \(width 8\) differ" "$work/shapes.txt"
expect_error shapes_in "shapes_in.txt:2: a: in=3 but input x has width 4" "$work/shapes_in.txt"
expect_error binary "binary.txt: not a text file" "$work/binary.txt"
expect_error empty "empty.txt: no nodes" "$work/empty.txt"
expect_error no_such "no-such-net: neither a file nor a built-in" no-such-net
expect_error bad_gpt2 "gpt2-dx: neither a file nor a built-in" gpt2-dx
head -c 2000 "$work/m.bin" > "$work/trunc.bin"
printf '\x30\x1a\x35\x01\x07' | dd of="$work/trunc.bin" bs=1 seek=4 conv=notrunc 2> /dev/null
expect_error model_version "trunc.bin: model file version" "$work/trunc.bin"

[ $fails -eq 0 ] && echo "graph_analysis: all passed" || echo "graph_analysis: $fails failed"
[ $fails -eq 0 ]
