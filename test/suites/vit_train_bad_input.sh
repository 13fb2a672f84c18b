#!/usr/bin/env bash
# train_vit end to end on a slice of Fashion-MNIST (log lines, checkpoints with
# family and mode in the header, restart from a checkpoint in another mode),
# then bad input: each must exit 1 with an error naming the file or flag,
# never crash (exit >= 128) or succeed.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/vit_bad
mkdir -p "$work"
PY=${PYTHON:-/usr/bin/python3}
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
echo "vit_train_bad_input: seed $seed"
[ -x bin/train_vit ] || make -s train_vit
fmnist=/usr/share/datasets/fashion-mnist
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# 1. a short run: log lines, checkpoint header, restart in another mode
run=$work/run
bin/train_vit -N cbwc -C 32 -L 2 -H 2 -nt 512 -ne 256 -b 64 -x 12 -pe 4 -u 2 -sd $seed -o "$run" \
    > "$work/train.out" 2>&1 || fail "train_vit run exited $?"
cat "$work/train.out"
grep -q '^s:12 trl:' "$run/main.log" && ok "log has s:12 trl:" || fail "no s:12 trl: line"
grep -q '^s:8 tel:' "$run/main.log" && ok "log has s:8 tel: (end of epoch 1)" || fail "no tel line"
grep -q '^s:8 tea:' "$run/main.log" && ok "log has s:8 tea:" || fail "no tea line"
ckpt=$run/model_00000012.bin
if [ -f "$ckpt" ]; then
    read -r magic family mode < <($PY -c "import numpy as n,sys; h=n.fromfile(sys.argv[1],'<i4',4); print(h[0],h[2],h[3])" "$ckpt")
    [ "$magic $family $mode" = "20261129 0 2" ] && ok "checkpoint header: magic, family vit, mode cbwc" \
        || fail "checkpoint header: $magic $family $mode"
else
    fail "no checkpoint $ckpt"
fi
bin/train_vit -e "$ckpt" -N ln -nt 256 -ne 128 -b 64 -x 2 -o "$work/run2" > "$work/train2.out" 2>&1 \
    && grep -q 'mode ln' "$work/train2.out" && ok "restart from the checkpoint in mode ln" \
    || { cat "$work/train2.out"; fail "restart from checkpoint"; }

# Swin: a short run with the centring ops, its checkpoint, restart in ln
srun=$work/swin_run
bin/train_vit -e swin -N cbwc -K 1 -E 8 -A 1,2 -nt 64 -ne 32 -b 16 -x 8 -pe 4 -u 2 -sd $seed \
    -o "$srun" > "$work/swin.out" 2>&1 || fail "train_vit -e swin exited $?"
tail -4 "$work/swin.out"
sckpt=$srun/model_00000008.bin
if [ -f "$sckpt" ]; then
    read -r magic family mode centre < <($PY -c "import numpy as n,sys; h=n.fromfile(sys.argv[1],'<i4',14); print(h[0],h[2],h[3],h[13])" "$sckpt")
    [ "$magic $family $mode $centre" = "20261129 1 2 1" ] && ok "Swin checkpoint header: family swin, mode cbwc, centring ops 1" \
        || fail "Swin checkpoint header: $magic $family $mode $centre"
else
    fail "no Swin checkpoint $sckpt"
fi
grep -q '^s:8 tea:' "$srun/main.log" && ok "Swin log has s:8 tea:" || fail "Swin: no tea line"
bin/train_vit -e "$sckpt" -N ln -nt 32 -ne 16 -b 16 -x 1 > "$work/swin2.out" 2>&1 \
    && grep -q 'mode ln' "$work/swin2.out" && ok "Swin restart from its checkpoint in mode ln" \
    || { cat "$work/swin2.out"; fail "Swin restart"; }

# 2. bad input. expect_error NAME PATTERN COMMAND...: exit 1 and the pattern in stderr
expect_error() {
    local name=$1 pattern=$2; shift 2
    "$@" > "$work/out.txt" 2> "$work/err.txt"
    local rc=$?
    if [ $rc -eq 1 ] && grep -q -- "$pattern" "$work/err.txt"; then
        ok "$name: $(head -c 160 "$work/err.txt" | tr '\n' ' ')"
    else
        fail "$name: exit $rc, stderr: $(head -c 300 "$work/err.txt")"
    fi
}
# a data dir of small valid IDX files, then broken copies of it
mkdata() {  # DIR: 100 train, 50 test images of 28x28
    mkdir -p "$1"
    $PY - "$1" <<'PYEOF'
import gzip, struct, sys, numpy as np
d = sys.argv[1]; rng = np.random.default_rng(0)
for split, n in (("train", 100), ("t10k", 50)):
    img = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    lab = rng.integers(0, 10, n, dtype=np.uint8)
    with gzip.open(f"{d}/{split}-images-idx3-ubyte.gz", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28) + img.tobytes())
    with gzip.open(f"{d}/{split}-labels-idx1-ubyte.gz", "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + lab.tobytes())
PYEOF
}
good=$work/good; mkdata "$good"
train() { bin/train_vit -C 16 -L 1 -H 2 -b 10 -x 1 "$@"; }
train -i "$good" > /dev/null 2>&1 && ok "the synthetic data set trains" || fail "synthetic data set"

bad=$work/corrupt; mkdata "$bad"
$PY -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[len(b)//2:len(b)//2+64]=bytes(64); open(p,'wb').write(b)" \
    "$bad/train-images-idx3-ubyte.gz"
expect_error "corrupt gzip" "train-images-idx3-ubyte.gz" train -i "$bad"

bad=$work/magic; mkdata "$bad"
$PY -c "import gzip,sys; p=sys.argv[1]; b=bytearray(gzip.open(p).read()); b[2]=0x0D; gzip.open(p,'wb').write(b)" \
    "$bad/t10k-images-idx3-ubyte.gz"
expect_error "wrong IDX magic" "not an IDX file" train -i "$bad"

bad=$work/trunc; mkdata "$bad"
$PY -c "import gzip,sys; p=sys.argv[1]; b=gzip.open(p).read(); gzip.open(p,'wb').write(b[:-100])" \
    "$bad/train-images-idx3-ubyte.gz"
expect_error "truncated IDX payload" "truncated" train -i "$bad"

bad=$work/labels; mkdata "$bad"
$PY -c "import gzip,sys; p=sys.argv[1]; b=bytearray(gzip.open(p).read()); b[20]=42; gzip.open(p,'wb').write(b)" \
    "$bad/train-labels-idx1-ubyte.gz"
expect_error "label out of range" "label 42" train -i "$bad"

bad=$work/count; mkdata "$bad"
$PY -c "import gzip,sys,struct; p=sys.argv[1]; b=bytearray(gzip.open(p).read()); b=struct.pack('>II',0x801,99)+b[8:107]; gzip.open(p,'wb').write(b)" \
    "$bad/train-labels-idx1-ubyte.gz"
expect_error "image/label count mismatch" "labels" train -i "$bad"

expect_error "missing data dir" "no-such-dir" train -i "$work/no-such-dir"

# model files: a GPT-2 file, a Swin-family header, a truncated ViT file, a non-finite weight
$PY dev/reference/gpt2.py --mode ln --seed 1 --model "$work/gpt2.bin" > /dev/null
expect_error "a GPT-2 model file" "not a ViT/Swin model file" train -i "$good" -e "$work/gpt2.bin"
$PY -c "import sys; b=bytearray(open(sys.argv[1],'rb').read()); b[8]=1; open(sys.argv[2],'wb').write(b)" \
    "$ckpt" "$work/swin_family.bin"
expect_error "a ViT checkpoint whose header says Swin" "bad Swin header" train -i "$good" -e "$work/swin_family.bin"
head -c 5000 "$ckpt" > "$work/trunc.bin"
expect_error "truncated model file" "truncated" train -i "$good" -e "$work/trunc.bin"
# slots 254-255 zeroed (no checksum, as in the references' files), else the CRC refuses it first
$PY -c "import sys,struct; b=bytearray(open(sys.argv[1],'rb').read()); b[2000:2004]=struct.pack('<f',float('nan')); b[1016:1024]=bytes(8); open(sys.argv[2],'wb').write(b)" \
    "$ckpt" "$work/nan.bin"
expect_error "non-finite weight" "not finite" train -i "$good" -e "$work/nan.bin"
expect_error "model/data mismatch (16x16 model)" "the model takes 16x16" \
    bash -c "$PY dev/reference/vit.py --mode ln --image-size 16 --image-channels 1 --patch-size 4 --num-classes 10 --model '$work/v16.bin' >/dev/null && bin/train_vit -i '$good' -e '$work/v16.bin' -x 1 -b 10"

# flags
expect_error "unknown mode" "-N" train -i "$good" -N layer
expect_error "bad number" "-b" train -i "$good" -b 0
expect_error "heads not dividing channels" "multiple of the number of heads" train -i "$good" -C 30 -H 4
expect_error "Swin: heads list not matching depths" "-A" train -i "$good" -e swin -D 2,2 -A 2
expect_error "Swin: window not dividing the resolution" "multiple of the window" train -i "$good" -e swin -W 5
expect_error "unknown model (no such family or file)" "-e resnet" train -i "$good" -e resnet
expect_error "patch not dividing the image" "multiple of the patch size" train -i "$good" -P 5
# the paper's Swin variant (-pv 1): cbwc and -e swin only, no centring ops; its
# file keeps it (header slot 15) and refuses another mode and folding
expect_error "-pv 1 with ViT" "needs -e swin or swin-tiny and -N cbwc" train -i "$good" -N cbwc -pv 1
expect_error "-pv 1 without -N cbwc" "needs -e swin or swin-tiny and -N cbwc" train -i "$good" -e swin -pv 1
expect_error "-pv 1 with -K 1" "the paper variant has no centring ops" train -i "$good" -e swin -N cbwc -K 1 -pv 1
if train -i "$good" -e swin -E 8 -A 1,2 -N cbwc -pv 1 -o "$work/paper" > "$work/paper.out" 2>&1 &&
   grep -q 'paper-variant=1' "$work/paper.out" &&
   [ "$($PY -c "import numpy as n,sys; print(n.fromfile(sys.argv[1],'<i4',16)[15])" "$work/paper/model_00000001.bin")" = 1 ]; then
    ok "-pv 1: trains, its checkpoint has header slot 15 = 1"
else
    cat "$work/paper.out"; fail "-pv 1 run or its checkpoint"
fi
expect_error "-N ln on a paper-variant file" "is the Swin paper variant, a cbwc model" \
    train -i "$good" -e "$work/paper/model_00000001.bin" -N ln
[ -x bin/fold ] || make -s fold
expect_error "bin/fold on a paper-variant file" "has no exact fold" \
    bin/fold "$work/paper/model_00000001.bin" "$work/paper_folded.bin"

echo "vit_train_bad_input: $fails failure(s)"
[ $fails -eq 0 ]
