#!/usr/bin/env bash
# The ImageNet-folder converter (images_to_shard) on real JPEGs shipped by
# Debian's opencv-doc, arranged into class folders here: class list order,
# per-class split, pixels vs an independent decode+resize (PIL), determinism,
# bad input (non-JPEG, truncated JPEG, empty class folder, bad class list,
# broken shards), and train_vit -i training ViT and Swin on the shards.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/vit_images
rm -rf "$work"; mkdir -p "$work"
PY=${PYTHON:-/usr/bin/python3}
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
echo "vit_images: seed $seed"
[ -x bin/images_to_shard ] && [ -x bin/train_vit ] || make -s images_to_shard train_vit
src=/usr/share/doc/opencv-doc/examples/data
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
[ -f "$src/left01.jpg" ] || { echo "FAIL: $src has no sample JPEGs (install opencv-doc)"; exit 1; }

in=$work/in
mkdir -p "$in/chessboard" "$in/produce" "$in/scenes"
cp "$src"/left0[1-9].jpg "$src"/left1[1-4].jpg "$in/chessboard/"
cp "$src"/apple.jpg "$src"/orange.jpg "$src"/fruits.jpg "$src"/baboon.jpg "$src"/butterfly.jpg "$in/produce/"
cp "$src"/aero1.jpg "$src"/aero3.jpg "$src"/building.jpg "$src"/home.jpg "$src"/board.jpg "$in/scenes/"
cp "$src"/HappyFish.jpg "$in/scenes/"
# not JPEGs: a real PNG renamed .jpg, a text file; a truncated JPEG (libjpeg pads it: kept, warned)
png=$(ls "$src"/*.png | head -1); cp "$png" "$in/produce/actually_png.jpg"
echo "hello" > "$in/scenes/notes.txt"
printf 'scenes\n# a comment\nchessboard\nproduce\n' > "$work/classes.txt"

bin/images_to_shard -i "$in" -o "$work/s" -cl "$work/classes.txt" -cs 40 -vf 0.3 -sd $seed \
    > "$work/conv.out" 2> "$work/conv.err"
rc=$?
cat "$work/conv.out" "$work/conv.err"
[ $rc -eq 0 ] && ok "converter exit 0" || fail "converter exit $rc"
grep -q "skipping $in/produce/actually_png.jpg" "$work/conv.err" && ok "PNG named .jpg skipped with a warning" || fail "no warning for the PNG"
grep -q "skipping $in/scenes/notes.txt" "$work/conv.err" && ok "text file skipped with a warning" || fail "no warning for the text file"

# independent check of the shards with PIL: header, labels, split sizes, pixels
$PY - "$work" "$in" 40 <<'PYEOF' || fails=$((fails + 1))
import sys, os, numpy as np
from PIL import Image
work, root, crop = sys.argv[1], sys.argv[2], int(sys.argv[3])
stored = (crop * 8 + 6) // 7
classes = ["scenes", "chessboard", "produce"]             # the class list order
usable = {"scenes": 6, "chessboard": 13, "produce": 5}     # readable JPEGs per class
def read(path):
    raw = open(path, "rb").read()
    h = np.frombuffer(raw[:1024], "<i4")
    n, k, side = int(h[2]), int(h[3]), int(h[4])
    labels = np.frombuffer(raw[1024:1024 + 4 * n], "<i4")
    px = np.frombuffer(raw[1024 + 4 * n:], np.uint8).reshape(n, side, side, 3)
    return h, labels, px
ok = True
def check(cond, msg):
    global ok
    print(("ok: " if cond else "FAIL: ") + msg)
    ok &= bool(cond)
ht, lt, pt = read(f"{work}/s_train.bin")
hv, lv, pv = read(f"{work}/s_val.bin")
check(ht[0] == 20261201 and ht[6] == 0 and ht[4] == stored and ht[7] == crop, f"train header {ht[:8]}")
check(hv[0] == 20261201 and hv[6] == 1 and hv[4] == crop and hv[7] == crop, f"val header {hv[:8]}")
for c, name in enumerate(classes):
    n = usable[name]; nv = max(1, int(np.floor(0.3 * n + 0.5)))
    check((lt == c).sum() == n - nv and (lv == c).sum() == nv,
          f"class {c} {name}: {(lt == c).sum()} train + {(lv == c).sum()} val, expected {n - nv} + {nv}")
check(open(f"{work}/s_classes.txt").read().split() == classes, "classes file in list order")
def reference(path, side):
    im = Image.open(path).convert("RGB"); w, h = im.size   # full decode (the converter may
    # decode at 1/2..1/8 scale by DCT scaling, keeping >= 2x the target: small differences)
    scale = min(w, h) / stored
    x0 = (w / scale - side) / 2 * scale; y0 = (h / scale - side) / 2 * scale
    box = (x0, y0, x0 + side * scale, y0 + side * scale)
    return np.asarray(im.resize((side, side), Image.BOX, box=box), dtype=np.float64)
# every stored image must match one decoded file of its class (the split is random)
for px, labels, side, what in ((pv, lv, crop, "val"), (pt, lt, stored, "train")):
    worst = 0.0
    for img, lab in zip(px, labels):
        d = os.path.join(root, classes[lab])
        refs = [reference(os.path.join(d, f), side) for f in sorted(os.listdir(d))
                if f.endswith(".jpg") and f != "actually_png.jpg"]
        worst = max(worst, min(np.abs(r - img).mean() for r in refs))
    # DCT-scaled decoding leaves ~3 levels on sharp chessboard edges; a 2-pixel shift of the
    # crop gives ~8, a wrong channel order or crop 20+
    check(worst < 4.0, f"{what} images match PIL decode + area resize + centre crop: worst mean |diff| {worst:.2f} levels")
sys.exit(0 if ok else 1)
PYEOF

bin/images_to_shard -i "$in" -o "$work/s2" -cl "$work/classes.txt" -cs 40 -vf 0.3 -sd $seed > /dev/null 2>&1
cmp -s "$work/s_train.bin" "$work/s2_train.bin" && cmp -s "$work/s_val.bin" "$work/s2_val.bin" \
    && ok "same seed, same shards" || fail "conversion not deterministic"

expect_error() {
    local name=$1 pattern=$2; shift 2
    "$@" > "$work/out.txt" 2> "$work/err.txt"
    local rc=$?
    if [ $rc -eq 1 ] && grep -q -- "$pattern" "$work/err.txt"; then
        ok "$name: $(grep -v '^warning' "$work/err.txt" | head -c 160 | tr '\n' ' ')"
    else
        fail "$name: exit $rc, stderr: $(head -c 300 "$work/err.txt")"
    fi
}
# a truncated JPEG: libjpeg pads it with grey; kept with a warning, never a crash
mkdir -p "$work/trunc/a"; cp "$src/apple.jpg" "$work/trunc/a/"; head -c 4000 "$src/messi5.jpg" > "$work/trunc/a/truncated.jpg"
bin/images_to_shard -i "$work/trunc" -o "$work/tr" -cs 40 > /dev/null 2> "$work/err.txt" \
    && grep -q "truncated.jpg: corrupt JPEG data" "$work/err.txt" && ok "truncated JPEG: kept with a warning" \
    || fail "truncated JPEG: $(cat "$work/err.txt")"
mkdir -p "$in/empty_class"
expect_error "empty class folder" "class 'empty_class' has no readable JPEG" bin/images_to_shard -i "$in" -o "$work/e" -cs 40
rmdir "$in/empty_class"
mkdir -p "$work/only_text/a"; echo x > "$work/only_text/a/x.jpg"
expect_error "class with only non-JPEG files" "no readable JPEG" bin/images_to_shard -i "$work/only_text" -o "$work/e" -cs 40
printf 'scenes\nno_such_class\n' > "$work/bad_classes.txt"
expect_error "class list naming a missing folder" "no_such_class" bin/images_to_shard -i "$in" -o "$work/e" -cl "$work/bad_classes.txt"
expect_error "missing input folder" "not a folder" bin/images_to_shard -i "$work/nope" -o "$work/e"
expect_error "bad crop size" "-cs" bin/images_to_shard -i "$in" -o "$work/e" -cs 3

# broken shards are rejected by the reader with the file named
head -c 20000 "$work/s_train.bin" > "$work/t_train.bin"; cp "$work/s_val.bin" "$work/t_val.bin"
expect_error "truncated shard" "truncated" bin/train_vit -i "$work/t_train.bin" -x 1 -b 2
$PY -c "import sys; b=bytearray(open(sys.argv[1],'rb').read()); b[0]^=1; open(sys.argv[2],'wb').write(b)" "$work/s_train.bin" "$work/m_train.bin"
cp "$work/s_val.bin" "$work/m_val.bin"
expect_error "shard with a wrong magic" "not an image shard" bin/train_vit -i "$work/m_train.bin" -x 1 -b 2
$PY -c "import sys,struct; b=bytearray(open(sys.argv[1],'rb').read()); b[1024:1028]=struct.pack('<i',7); open(sys.argv[2],'wb').write(b)" "$work/s_train.bin" "$work/l_train.bin"
cp "$work/s_val.bin" "$work/l_val.bin"
expect_error "shard with a label out of range" "label 7" bin/train_vit -i "$work/l_train.bin" -x 1 -b 2

# both families train on the shards (RGB 40x40, random-resized-crop + flips)
bin/train_vit -e vit -i "$work/s_train.bin" -P 8 -C 32 -L 2 -H 2 -b 4 -x 3 -pe 1 > "$work/tv.out" 2>&1 \
    && grep -q "final: family ViT" "$work/tv.out" && ok "ViT trains on the shards" || { cat "$work/tv.out"; fail "ViT on shards"; }
bin/train_vit -e swin -i "$work/s_train.bin" -P 2 -W 5 -E 16 -b 4 -x 3 -pe 1 > "$work/ts.out" 2>&1 \
    && grep -q "final: family Swin" "$work/ts.out" && ok "Swin trains on the shards (20x20 tokens, 4x4 windows of 5)" || { cat "$work/ts.out"; fail "Swin on shards"; }

echo "vit_images: $fails failure(s)"
[ $fails -eq 0 ]
