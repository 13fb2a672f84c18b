#!/usr/bin/env bash
# Seed corpora for the fuzz targets (test/fuzz/fuzz_*.c), generated from real
# project outputs: small GPT-2 / ViT / Swin models and debug states written by
# the PyTorch references, a folded model (bin/fold), a checkpoint's training
# state (bin/train_gpt2 -o), slices of the KJV token shards and of GPT-2's
# encoder.json + vocab.bpe, SFT shards of the Alpaca fixture
# (bin/alpaca_to_sft), Fashion-MNIST IDX heads (raw and gzip), an image shard of
# two opencv-doc JPEGs (bin/images_to_shard), the graphs in docs/graphs/ and
# the ONNX exports of test/onnx_models.py.
#   test/fuzz/make_seeds.sh OUTDIR    writes OUTDIR/<target>/*; a no-op when
#                                     OUTDIR/.complete records this script's checksum
# Needs the gcc build (make cpu) and the Debian data of make deps.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: make_seeds.sh OUTDIR}
stamp=$(cksum < test/fuzz/make_seeds.sh)
[ "$(cat "$out/.complete" 2>/dev/null)" = "$stamp" ] && exit 0
PY=${PYTHON:-/usr/bin/python3}
fmnist=/usr/share/datasets/fashion-mnist
jpegs=/usr/share/doc/opencv-doc/examples/data
for prog in fold train_gpt2 alpaca_to_sft images_to_shard; do
    [ -x "bin/$prog" ] || make -s "$prog"
done
[ -f data/gpt2/encoder.json ] || scripts/deps/data.sh
scripts/prepare_kjv.sh > /dev/null
scripts/prepare_kjv_bytes.sh > /dev/null
for f in "$fmnist/t10k-images-idx3-ubyte.gz" "$jpegs/apple.jpg" "$jpegs/orange.jpg"; do
    [ -f "$f" ] || { echo "make_seeds: $f is missing (make deps installs it)" >&2; exit 1; }
done
rm -rf "$out"
tmp=$out/tmp
mkdir -p "$tmp"
for t in test/fuzz/fuzz_*.c; do
    t=${t#test/fuzz/fuzz_}; mkdir -p "$out/${t%.c}"
done

# models and debug states from the references (tiny configs: fast to fuzz)
$PY dev/reference/gpt2.py --mode ln --seed 1 --L 1 --C 8 --NH 2 --V 32 --Vp 32 --maxT 8 --B 1 \
    --T 4 --steps 2 --model "$tmp/gpt2_ln.bin" --state "$tmp/gpt2_ln_state.bin" > /dev/null
$PY dev/reference/gpt2.py --mode cbwc --seed 2 --L 2 --C 4 --NH 1 --V 5 --Vp 8 --maxT 3 --B 2 \
    --T 3 --mask --model "$tmp/gpt2_cbwc.bin" --state "$tmp/gpt2_cbwc_state.bin" > /dev/null
bin/fold "$tmp/gpt2_ln.bin" "$tmp/gpt2_folded.bin" > /dev/null
$PY dev/reference/vit.py --mode ln --image-size 4 --image-channels 1 --patch-size 2 \
    --num-classes 3 --channels 4 --num-layers 1 --num-heads 2 --mlp-ratio 1 --B 1 --steps 1 \
    --model "$tmp/vit.bin" --state "$tmp/vit_state.bin" > /dev/null
$PY dev/reference/swin.py --mode cbwc --image-size 8 --image-channels 1 --patch-size 2 \
    --num-classes 3 --embed-dim 2 --depths 1,1 --heads 1,2 --window 2 --mlp-ratio 1 --B 1 \
    --steps 1 --model "$tmp/swin.bin" --state "$tmp/swin_state.bin" > /dev/null
# a checkpoint's training state: one step of a tiny byte-level model
bin/train_gpt2 -e d1c4h1v256t4 -i "data/kjv/kjv_bytes_train_000000.bin" -b 1 -t 4 -x 1 -n 1 -v 0 \
    -o "$tmp/ckpt" > /dev/null
# SFT shards of the Alpaca fixture; an image shard of two real JPEGs
bin/alpaca_to_sft test/fixtures/alpaca_fixture.json "$tmp/sft" 1 > /dev/null
mkdir -p "$tmp/jpeg/apple" "$tmp/jpeg/orange"
cp "$jpegs/apple.jpg" "$tmp/jpeg/apple/"; cp "$jpegs/orange.jpg" "$tmp/jpeg/orange/"
bin/images_to_shard -i "$tmp/jpeg" -o "$tmp/img" -cs 8 -vf 0 > /dev/null
# small real models exported to ONNX by PyTorch
$PY test/onnx_models.py "$tmp/onnx" > /dev/null 2>&1

$PY - "$out" "$tmp" "$fmnist" <<'PYEOF'
import glob, gzip, json, os, shutil, struct, sys
out, tmp, fmnist = sys.argv[1:4]
def put(target, name, data):
    with open(os.path.join(out, target, name), "wb") as f:
        f.write(data)
def read(path):
    with open(path, "rb") as f:
        return f.read()
def header_ints(b, n):
    return struct.unpack(f"<{n}i", b[:4 * n])

# GPT-2 model files
for m in ("ln", "cbwc", "folded"):
    put("gpt2_model", f"{m}.bin", read(f"{tmp}/gpt2_{m}.bin"))
# debug states, prefixed with the model they belong to: maxT, V, parameters
for m in ("ln", "cbwc"):
    model = read(f"{tmp}/gpt2_{m}.bin")
    h = header_ints(model, 8)
    nparams = (len(model) - 1024) // 4
    put("debug_state", f"{m}.bin", struct.pack("<3I", h[2], h[3], nparams) + read(f"{tmp}/gpt2_{m}_state.bin"))
# the training state, prefixed with the parameter count and the step
ckpt = sorted(glob.glob(f"{tmp}/ckpt/state_*.bin"))[-1]
model = read(ckpt.replace("state_", "model_"))
step = int(os.path.basename(ckpt)[6:14])
put("train_state", "state.bin", struct.pack("<Ii", (len(model) - 1024) // 4, step) + read(ckpt))
# token shards: a re-headed slice of the KJV shard, and its raw head (truncated)
kjv = read("data/kjv/kjv_train_000000.bin")
tokens = kjv[1024:1024 + 2 * 300]
put("token_shard", "kjv_slice.bin", struct.pack("<3i", 20240520, 1, 300) + bytes(1012) + tokens)
put("token_shard", "kjv_head.bin", kjv[:1024 + 256])
for p in sorted(glob.glob(f"{tmp}/sft_*.bin")):
    put("sft_shard", os.path.basename(p), read(p))
put("sft_shard", "kjv_slice.bin", read(f"{out}/token_shard/kjv_slice.bin"))
# a multiple-choice eval file (llm.c's format): 3 examples of KJV tokens, 4 completions each
kjv_ids = struct.unpack("<300H", tokens)
stream, longest = [], 0
for i in range(3):
    ex = [65535, 0, i, i % 4, 4, 5] + list(kjv_ids[20 * i:20 * i + 5])
    for c in range(4):
        ex += [1 + c] + list(kjv_ids[100 + 10 * c:100 + 10 * c + 1 + c])
    ex[1] = 2 * len(ex)
    longest = max(longest, ex[1])
    stream += ex
put("mc_eval", "three.bin", struct.pack("<4i", 20240522, 1, 3, longest) + bytes(1008) +
    struct.pack(f"<{len(stream)}H", *stream))
# tokenizer: the 256 byte tokens, the first 40 merges and <|endoftext|>; encoder NUL vocab
enc = json.load(open("data/gpt2/encoder.json", encoding="utf-8"))
merges = open("data/gpt2/vocab.bpe", encoding="utf-8").read().split("\n")
keep = 256 + 40
small = {t: i for t, i in enc.items() if i < keep}
small["<|endoftext|>"] = keep
enc_bytes = json.dumps(small, ensure_ascii=False).encode("utf-8")
bpe_bytes = "\n".join(merges[:41]).encode("utf-8") + b"\n"
put("tokenizer", "gpt2_slice", enc_bytes + b"\0" + bpe_bytes)
put("alpaca", "fixture.json", read("test/fixtures/alpaca_fixture.json"))
put("alpaca", "one.json", json.dumps([json.load(open("test/fixtures/alpaca_fixture.json"))[0]]).encode())
# Fashion-MNIST: the header and first images / labels, raw and gzip
images = gzip.decompress(read(f"{fmnist}/t10k-images-idx3-ubyte.gz"))
labels = gzip.decompress(read(f"{fmnist}/t10k-labels-idx1-ubyte.gz"))
img3 = struct.pack(">IIII", 0x803, 3, 28, 28) + images[16:16 + 3 * 784]
lab = struct.pack(">II", 0x801, 40) + labels[8:48]
put("idx", "images3.idx", img3)
put("idx", "images3.idx.gz", gzip.compress(img3))
put("idx", "labels40.idx", lab)
put("idx", "labels40.idx.gz", gzip.compress(lab))
put("idx", "images_head.gz", read(f"{fmnist}/t10k-images-idx3-ubyte.gz")[:2048])
put("image_shard", "train.bin", read(f"{tmp}/img_train.bin"))
put("vision_model", "vit.bin", read(f"{tmp}/vit.bin"))
put("vision_model", "swin.bin", read(f"{tmp}/swin.bin"))
# vision states, prefixed with family, image size, channels, classes, parameters
for fam, name in ((0, "vit"), (1, "swin")):
    model = read(f"{tmp}/{name}.bin")
    h = header_ints(model, 8)
    prefix = struct.pack("<5I", fam, h[4], h[5], h[7], (len(model) - 1024) // 4)
    put("vision_state", f"{name}.bin", prefix + read(f"{tmp}/{name}_state.bin"))
# train_vit's training state for make_seeds' tiny ViT (fuzz_vision_train_state builds that
# model): prefixed with the train image count and the step; version 1 with moments and
# without, the second carrying the CRC32 kind (the target makes the CRC right), and
# version 2 with an EMA of the weights (decay 0.9, after the order)
n = (len(read(f"{tmp}/vit.bin")) - 1024) // 4
for version, moments, ema, crc_kind in ((1, 1, 0, 0), (1, 0, 0, 0x31435243), (2, 1, 1, 0x31435243)):
    count, step = 7, 3
    h = [0] * 256
    h[0:6] = [20261202, version, step, 2, 1, 4]
    h[6:8] = struct.unpack("<2i", struct.pack("<Q", 0x9E3779B97F4A7C15))
    h[8:10] = struct.unpack("<2i", struct.pack("<Q", n))
    h[10], h[11], h[254] = moments, count, crc_kind
    if ema:
        h[12], h[13] = 1, struct.unpack("<i", struct.pack("<f", 0.9))[0]
    body = struct.pack("<256i", *h)
    if moments:
        body += struct.pack(f"<{n}f", *[0.01] * n) + struct.pack(f"<{n}f", *[1e-4] * n)
    body += struct.pack(f"<{count}i", *[3, 0, 6, 1, 5, 2, 4])
    if ema:
        body += struct.pack(f"<{n}f", *[0.02] * n)
    name = f"vit_m{moments}.bin" if version == 1 else f"vit_v{version}_ema.bin"
    put("vision_train_state", name, struct.pack("<Ii", count, step) + body)
# safetensors: a tiny GPT-2 (L=1, C=4, V=8, maxT=4) in Hugging Face's layout, f32 and bf16
sys.path.insert(0, "dev/reference")
import hf_gpt2, numpy as np
rng = np.random.default_rng(0)
tiny = {"wte.weight": (8, 4), "wpe.weight": (4, 4), "ln_f.weight": (4,), "ln_f.bias": (4,)}
for name, shape in (("ln_1.weight", (4,)), ("ln_1.bias", (4,)), ("attn.c_attn.weight", (4, 12)),
                    ("attn.c_attn.bias", (12,)), ("attn.c_proj.weight", (4, 4)), ("attn.c_proj.bias", (4,)),
                    ("ln_2.weight", (4,)), ("ln_2.bias", (4,)), ("mlp.c_fc.weight", (4, 16)),
                    ("mlp.c_fc.bias", (16,)), ("mlp.c_proj.weight", (16, 4)), ("mlp.c_proj.bias", (4,))):
    tiny["h.0." + name] = shape
tensors = {"transformer." + k: rng.standard_normal(v).astype(np.float32) for k, v in tiny.items()}
for dt in ("f32", "bf16"):
    hf_gpt2.write_safetensors(f"{tmp}/tiny_{dt}.safetensors", tensors, dt)
    put("safetensors", f"tiny_{dt}.safetensors", read(f"{tmp}/tiny_{dt}.safetensors"))
# GCIDE: the dictionary's start and a stretch from its middle (tools/gcide_to_alpaca)
gcide = gzip.decompress(read("/usr/share/dictd/gcide.dict.dz"))
put("gcide", "start.txt", gcide[:16384])
put("gcide", "middle.txt", gcide[len(gcide) // 2:len(gcide) // 2 + 16384])
for p in sorted(glob.glob("docs/graphs/*.txt")):
    put("graph", os.path.basename(p), read(p))
# ONNX: the exports of test/onnx_models.py (GPT-2 reference, GPT/BERT/ViT-like at opsets 14 and 17)
for p in sorted(glob.glob(f"{tmp}/onnx/*.onnx")):
    put("onnx", os.path.basename(p), read(p))
    put("onnx_fold", os.path.basename(p), read(p))  # the ONNX fold reads the same files
PYEOF
rm -rf "$tmp"
echo "$stamp" > "$out/.complete"
echo "make_seeds: $(find "$out" -type f ! -name .complete | wc -l) seeds in $out"
