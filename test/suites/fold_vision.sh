#!/usr/bin/env bash
# bin/fold on ViT and Swin models trained here (a few train_vit steps on
# Fashion-MNIST): ViT in ln and cbwc, Swin in ln and cbwc, and Swin with the
# centring ops (-K 1) in ln. For each: the folded model's logits equal the
# trained model's on real test images within 1e-5 relative and the predicted
# classes are the same (test_fold; the fold only moves the mean that LN
# subtracts into the stored weights, so the two differ by fp32 rounding,
# ~1e-7 relative, and 1e-5 leaves a 100x margin while any real error, an LN
# run as RMS on a non-zero-mean input, is ~1e-1); its RMS norm count (the
# fold's report, header slot 14) is what foldcheck predicts for the built-in
# graph of the same architecture and for the model file; train_vit -ev 1
# gives the same test accuracy. Independent checks in PyTorch
# (dev/reference/vit.py, swin.py): our folded model against the reference's
# ln model, and our ln model against the reference's forward of the folded
# file. A negative control: the ln weights merely relabelled as folded (no
# centring) must fail the check. Bad input gives clear errors.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/fold_vision
rm -rf "$work"; mkdir -p "$work"
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
echo "fold_vision: seed $seed"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
PY=${PYTHON:-/usr/bin/python3}
fmnist=/usr/share/datasets/fashion-mnist
for p in train_vit fold test_fold test_vit foldcheck; do
    [ -x bin/$p ] || make -s $p || { echo "FAIL: cannot build $p"; exit 1; }
done
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
run() { # NAME COMMAND...: passes when the command exits 0; its output indented
    local name=$1; shift
    if "$@" > "$work/run.log" 2>&1; then ok "$name"; else bad "$name"; fi
    sed 's/^/     /' "$work/run.log"
}
header_slot() { $PY -c "import struct,sys; print(struct.unpack_from('<i', open(sys.argv[1],'rb').read(), 4 * int(sys.argv[2]))[0])" "$@"; }
foldable() { bin/foldcheck "$1" | sed -n 's#^foldable: \([0-9]*/[0-9]*\) LNs.*#\1#p'; }

# NAME FOLDCHECK_NET EV TRAIN_VIT_FLAGS...: train a few steps, fold, check
# (EV = 1: also train_vit -ev 1 on both models)
check_model() {
    local name=$1 net=$2 ev=$3; shift 3
    local dir=$work/$name
    if ! bin/train_vit "$@" -b 8 -x 3 -nt 24 -ne 8 -l 3e-3 -u 1 -pe 100 -sd $((seed % 100000)) \
        -o "$dir" > "$work/$name.train.log" 2>&1; then
        bad "$name: train_vit $*"; tail -3 "$work/$name.train.log"; return
    fi
    local model; model=$(ls "$dir"/model_*.bin | tail -1)
    if ! bin/fold "$model" "$work/$name.folded.bin" > "$work/$name.fold.log" 2>&1; then
        bad "$name: fold"; cat "$work/$name.fold.log"; return
    fi
    local report; report=$(sed -n 's#.* \([0-9]*/[0-9]*\) LNs -> RMSNorm.*#\1#p' "$work/$name.fold.log")
    local predicted; predicted=$(foldable "$net")
    local of_file; of_file=$(foldable "$model")
    local slot; slot=$(header_slot "$work/$name.folded.bin" 14)
    [ -n "$report" ] && [ "$report" = "$predicted" ] && [ "$of_file" = "$predicted" ] && [ "$slot" = "${predicted%/*}" ] &&
        ok "$name: fold turns $report LNs into RMSNorm (foldcheck $net: $predicted, foldcheck on the file: $of_file, header slot 14: $slot)" ||
        bad "$name: fold says '$report', foldcheck $net '$predicted', foldcheck on the file '$of_file', header slot 14 '$slot'"
    run "$name: folded vs trained logits and classes on 64 Fashion-MNIST test images" \
        bin/test_fold "$model" "$work/$name.folded.bin" $fmnist -ne 64
    cp "$model" "$work/$name.bin"
    [ "$ev" = 1 ] || return
    local acc_ln acc_folded
    acc_ln=$(bin/train_vit -e "$model" -ev 1 -ne 64 -b 32 2>&1 | sed -n 's/.*test_accuracy \([0-9.]*\).*/\1/p')
    acc_folded=$(bin/train_vit -e "$work/$name.folded.bin" -ev 1 -ne 64 -b 32 2>&1 | sed -n 's/.*test_accuracy \([0-9.]*\).*/\1/p')
    [ -n "$acc_ln" ] && [ "$acc_ln" = "$acc_folded" ] &&
        ok "$name: train_vit -ev 1: test accuracy $acc_ln on 64 images, trained and folded" ||
        bad "$name: train_vit -ev 1: accuracy '$acc_ln' trained vs '$acc_folded' folded"
}

check_model vit_ln vit-tiny-d2 0 -e vit -N ln -C 32 -L 2 -H 2
check_model vit_cbwc vit-tiny-d2 1 -e vit -N cbwc -C 32 -L 2 -H 2
check_model swin_ln swin-tiny-s2 0 -e swin -N ln -E 16 -A 2,4
check_model swin_cbwc swin-tiny-s2 0 -e swin -N cbwc -E 16 -A 2,4
check_model swin_ln_centred swin-tiny-s2-centred 1 -e swin -N ln -E 16 -A 2,4 -K 1

# independent checks in PyTorch: the reference's ln forward vs our folded
# model, and the reference's forward of the folded file vs our ln model
for pair in vit:vit_ln swin:swin_ln swin:swin_ln_centred; do
    fam=${pair%%:*} name=${pair#*:} s=$(( (seed + ${#name}) % 100000 ))
    [ -f "$work/$name.bin" ] || continue
    $PY dev/reference/$fam.py --load "$work/$name.bin" --seed $s --B 3 --state "$work/$name.ref_ln.bin" > /dev/null &&
        run "$name: our folded model vs PyTorch's forward of the trained ln model" \
            bin/test_vit "$work/$name.folded.bin" "$work/$name.ref_ln.bin" --forward-only ||
        bad "$name: dev/reference/$fam.py --load the ln model"
    [ $fam = vit ] || continue
    $PY dev/reference/$fam.py --load "$work/$name.folded.bin" --seed $s --B 3 --state "$work/$name.ref_folded.bin" > /dev/null &&
        run "$name: our ln model vs PyTorch's forward of the folded file" \
            bin/test_vit "$work/$name.bin" "$work/$name.ref_folded.bin" --forward-only ||
        bad "$name: dev/reference/$fam.py --load the folded model"
done

# negative control: the ln weights relabelled as folded (mode 3, slot 14, no
# checksum) run the foldable norms as RMSNorm on inputs that are not zero-mean
relabel() { # IN OUT MODE SLOT14
    $PY - "$@" <<'PYEOF'
import struct, sys
src, dst, mode, norms = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
b = bytearray(open(src, "rb").read())
struct.pack_into("<i", b, 4 * 3, mode)
struct.pack_into("<i", b, 4 * 14, norms)
struct.pack_into("<2i", b, 4 * 254, 0, 0)  # no checksum
open(dst, "wb").write(bytes(b))
PYEOF
}
for name in vit_ln swin_ln; do
    [ -f "$work/$name.bin" ] || continue
    relabel "$work/$name.bin" "$work/$name.unfolded.bin" 3 "$(header_slot "$work/$name.folded.bin" 14)"
    if bin/test_fold "$work/$name.bin" "$work/$name.unfolded.bin" $fmnist -ne 32 > "$work/neg.log" 2>&1; then
        bad "$name: relabelled without centring passes the check"; cat "$work/neg.log"
    else
        ok "$name: relabelled without centring fails the check: $(grep -m1 'max|folded' "$work/neg.log" | cut -c1-110)"
    fi
done

expect_error() { # NAME PATTERN COMMAND...
    local name=$1 pattern=$2; shift 2
    "$@" > "$work/err.out" 2> "$work/err.err"
    local rc=$?
    if [ $rc -eq 1 ] && grep -qE -- "$pattern" "$work/err.err"; then
        ok "bad $name: $(head -1 "$work/err.err" | cut -c1-150)"
    else
        bad "bad $name: exit $rc, stderr: $(head -c 300 "$work/err.err")"
    fi
}
bin/train_vit -e vit -N rms -C 16 -L 1 -H 2 -b 8 -x 1 -nt 8 -ne 8 -o "$work/rms" > /dev/null 2>&1 || bad "train_vit -N rms"
expect_error fold_rms "model_00000001.bin: norm mode is 'rms': nothing to fold" bin/fold "$work/rms/model_00000001.bin" "$work/x.bin"
bin/train_vit -e swin -N prms -nf 0.25 -P 2 -W 7 -E 16 -b 8 -x 1 -nt 8 -ne 8 -o "$work/prms" > /dev/null 2>&1 || bad "train_vit -e swin -N prms"
expect_error fold_prms "model_00000001.bin: norm mode is 'prms': partial RMSNorm is not the ln model" bin/fold "$work/prms/model_00000001.bin" "$work/x.bin"
expect_error fold_folded "vit_ln.folded.bin: norm mode is 'folded'.*folded already" bin/fold "$work/vit_ln.folded.bin" "$work/x.bin"
expect_error fold_text "vit-tiny.txt: not a GPT-2 model file .* nor a ViT/Swin model file" bin/fold docs/graphs/vit-tiny.txt "$work/x.bin"
expect_error train_folded "folded model is for inference only" bin/train_vit -e "$work/vit_ln.folded.bin" -x 1 -b 8 -nt 8 -ne 8
expect_error folded_count "bad_count.bin: folded model records 4 folded norms in header slot 14; its config gives 5" \
    bash -c "$(declare -f relabel); PY=$PY relabel '$work/vit_ln.folded.bin' '$work/bad_count.bin' 3 4 && bin/test_fold '$work/vit_ln.bin' '$work/bad_count.bin' $fmnist"
expect_error other_model "have different configs" bin/test_fold "$work/vit_ln.bin" "$work/swin_ln.folded.bin" $fmnist
expect_error not_folded "expected an ln or cbwc model and a folded model, got ln and ln" \
    bin/test_fold "$work/vit_ln.bin" "$work/vit_ln.bin" $fmnist
expect_error ev_family "-ev 1 tests a model file" bin/train_vit -e vit -ev 1

[ $fails -eq 0 ] && echo "fold_vision: all passed" || echo "fold_vision: $fails failed"
[ $fails -eq 0 ]
