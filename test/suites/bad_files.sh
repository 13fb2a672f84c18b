#!/usr/bin/env bash
# The bad-file corpus (issue 7): for every format foldnorm reads, valid files
# from the project's own tools, then test/make_bad_files.py's variants of them
# (truncated at every header boundary and inside the payload, wrong magic and
# version, sizes that overflow 32 bits, negative and huge dimensions, NaN and
# inf weights, out-of-range ids, trailing data, ...), each fed to the program
# that reads it. A baseline must exit 0; a bad file must exit with status 1
# (not 0, not a signal), print an error naming the file (the case's pattern),
# and print no sanitizer report (make SAN=1). One line per case.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/bad_files
rm -rf "$work"; mkdir -p "$work"
PY=${PYTHON:-/usr/bin/python3}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
good=$work/good bad=$work/bad run=$work/run
mkdir -p "$good" "$run"
fmnist=/usr/share/datasets/fashion-mnist
jpegs=/usr/share/doc/opencv-doc/examples/data
progs="train_gpt2 test_gpt2 fold sample tokenizer alpaca_to_sft train_vit test_vit foldcheck images_to_shard onnx_export"
for p in $progs; do [ -x "bin/$p" ] || make -s "$p" || { echo "FAIL: cannot build $p"; exit 1; }; done
[ -f data/gpt2/encoder.json ] || scripts/deps/data.sh
scripts/prepare_kjv.sh > /dev/null && scripts/prepare_kjv_bytes.sh > /dev/null ||
    { echo "FAIL: cannot prepare the KJV shards"; exit 1; }
for f in "$fmnist/train-images-idx3-ubyte.gz" "$jpegs/apple.jpg"; do
    [ -f "$f" ] || { echo "FAIL: $f missing (make deps)"; exit 1; }
done

# ---- valid files, written by the project's tools
t0=$SECONDS
setup() { "$@" > "$work/setup.log" 2>&1 || { echo "FAIL: setup: $*"; cat "$work/setup.log"; exit 1; }; }
setup $PY dev/reference/gpt2.py --mode ln --seed 3 --L 1 --C 8 --NH 2 --V 256 --Vp 256 --maxT 8 \
    --B 1 --T 4 --steps 2 --model "$good/gpt2.bin" --state "$good/gpt2_state.bin"
setup bin/fold "$good/gpt2.bin" "$good/gpt2_folded.bin"
setup $PY dev/reference/vit.py --mode cbwc --image-size 4 --image-channels 1 --patch-size 2 \
    --num-classes 3 --channels 4 --num-layers 1 --num-heads 2 --mlp-ratio 1 --B 2 --steps 1 \
    --model "$good/vit.bin" --state "$good/vit_state.bin"
setup $PY dev/reference/swin.py --mode ln --image-size 8 --image-channels 1 --patch-size 2 \
    --num-classes 3 --embed-dim 2 --depths 1,1 --heads 1,2 --window 2 --mlp-ratio 1 --B 1 \
    --steps 1 --model "$good/swin.bin" --state "$good/swin_state.bin"
setup $PY - "$good" "$fmnist" <<'PYEOF'
import gzip, struct, sys
good, fmnist = sys.argv[1:3]
def reshard(src, dst, n):  # the first n tokens of a real shard, re-headed
    b = open(src, "rb").read()
    open(dst, "wb").write(struct.pack("<3i", 20240520, 1, n) + bytes(1012) + b[1024:1024 + 2 * n])
reshard("data/kjv/kjv_bytes_train_000000.bin", f"{good}/bytes_shard.bin", 2000)
reshard("data/kjv/kjv_train_000000.bin", f"{good}/kjv_gpt2_shard.bin", 2000)
import os
os.makedirs(f"{good}/fmnist", exist_ok=True)
for split, n in (("train", 100), ("t10k", 50)):
    img = gzip.decompress(open(f"{fmnist}/{split}-images-idx3-ubyte.gz", "rb").read())
    lab = gzip.decompress(open(f"{fmnist}/{split}-labels-idx1-ubyte.gz", "rb").read())
    with open(f"{good}/fmnist/{split}-images-idx3-ubyte.gz", "wb") as f:
        f.write(gzip.compress(struct.pack(">IIII", 0x803, n, 28, 28) + img[16:16 + n * 784]))
    with open(f"{good}/fmnist/{split}-labels-idx1-ubyte.gz", "wb") as f:
        f.write(gzip.compress(struct.pack(">II", 0x801, n) + lab[8:8 + n]))
PYEOF
setup bin/train_gpt2 -e "$good/gpt2.bin" -i "$good/bytes_shard.bin" -b 1 -t 4 -x 1 -n 1 -v 0 -o "$good/ckpt"
setup bin/alpaca_to_sft test/fixtures/alpaca_fixture.json "$good/sft" 1
mkdir -p "$good/jpeg/a" "$good/jpeg/b" "$good/gpt2"
cp "$jpegs/apple.jpg" "$jpegs/orange.jpg" "$good/jpeg/a/"; cp "$jpegs/baboon.jpg" "$jpegs/butterfly.jpg" "$good/jpeg/b/"
setup bin/images_to_shard -i "$good/jpeg" -o "$good/img" -cs 8 -vf 0.5
cp "$jpegs/apple.jpg" "$good/"
cp data/gpt2/encoder.json data/gpt2/vocab.bpe "$good/gpt2/"
cp test/fixtures/alpaca_fixture.json "$good/alpaca.json"
cp docs/graphs/post_ln.txt "$good/graph.txt"
setup bin/onnx_export -e "$good/gpt2.bin" "$good/model.onnx"
echo "In the beginning God created the heaven and the earth." > "$good/text.txt"
setup $PY test/make_bad_files.py "$good" "$bad"
echo "bad_files: valid files and $(wc -l < "$bad/manifest.tsv") cases written in $((SECONDS - t0)) s"

# ---- CONSUMER PATH: the command that reads a file of that kind
consume() {
    local consumer=$1 f=$2
    case $consumer in
    gpt2_model) bin/train_gpt2 -e "$f" -i "$good/bytes_shard.bin" -b 1 -t 4 -x 1 -v 0 ;;
    gpt2_model_fold) bin/fold "$f" "$run/folded.bin" ;;
    gpt2_model_sample) bin/sample -e "$f" -p "In the" -g 1 ;;
    gpt2_model_test) bin/test_gpt2 "$f" "$good/gpt2_state.bin" --forward-only ;;
    debug_state) bin/test_gpt2 "$good/gpt2.bin" "$f" ;;
    train_state) # a fresh copy: resuming writes new checkpoints
        rm -rf "$run/ckpt"; cp -r "$f" "$run/ckpt"
        bin/train_gpt2 -o "$run/ckpt" -y 1 -e "$good/gpt2.bin" -i "$good/bytes_shard.bin" -b 1 -t 4 -x 2 -v 0 ;;
    token_shard) bin/train_gpt2 -e "$good/gpt2.bin" -i "$f" -b 1 -t 4 -x 1 -v 0 ;;
    sft_shard) bin/train_gpt2 -e d1c8h2v50257t8 -sft 1 -i "$f" -b 1 -t 4 -x 1 -v 0 ;;
    tokenizer) bin/tokenizer -vd "$f" encode "$good/text.txt" ;;
    alpaca) bin/alpaca_to_sft "$f" "$run/sft" 0 ;;
    idx) bin/train_vit -i "$f" -C 16 -L 1 -H 2 -b 10 -x 1 -nt 100 -ne 50 ;;
    image_shard) bin/train_vit -i "${f}_train.bin" -C 16 -L 1 -H 2 -P 4 -x 1 -b 2 ;;
    vision_model_vit) bin/test_vit "$f" "$good/vit_state.bin" ;;
    vision_model_swin) bin/test_vit "$f" "$good/swin_state.bin" ;;
    vision_model_fold) bin/fold "$f" "$run/folded.bin" ;;
    vision_state_vit) bin/test_vit "$good/vit.bin" "$f" ;;
    vision_state_swin) bin/test_vit "$good/swin.bin" "$f" ;;
    graph|onnx) bin/foldcheck "$f" ;;
    images_to_shard) bin/images_to_shard -i "$f" -o "$run/i2s" -cs 8 ;;
    images_to_shard_classes) bin/images_to_shard -i "$f" -o "$run/i2s" -cs 8 -cl "$f.classes" ;;
    *) echo "bad_files: unknown consumer $consumer" >&2; return 99 ;;
    esac
}

passed=0 failed=0 t0=$SECONDS
while IFS=$'\t' read -r name consumer path expect; do
    consume "$consumer" "$path" > "$run/out" 2> "$run/err"
    rc=$?
    # errors name the copy a resumed run read: name the case's own directory instead
    [ "$consumer" = train_state ] && sed -i "s|$run/ckpt|$path|g" "$run/err"
    why=""
    if grep -qE 'Sanitizer|runtime error:' "$run/err"; then
        why="sanitizer report"
    elif [ "$expect" = ok ]; then
        [ $rc -eq 0 ] || why="baseline exit $rc"
    elif [ $rc -ne 1 ]; then
        why="exit $rc (expected 1)"
    elif ! grep -qE -- "$expect" "$run/err"; then
        why="error does not match '$expect'"
    fi
    msg=$(grep -v '^warning' "$run/err" | head -1 | cut -c1-150)
    if [ -z "$why" ]; then
        passed=$((passed + 1)); echo "ok   $name: ${msg:-exit 0}"
    else
        failed=$((failed + 1)); echo "FAIL $name: $why: $(head -c 400 "$run/err" | tr '\n' ' ')"
    fi
done < "$bad/manifest.tsv"
echo "bad_files: $passed passed, $failed failed ($((SECONDS - t0)) s)"
[ $failed -eq 0 ]
