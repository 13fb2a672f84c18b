#!/usr/bin/env bash
# Hugging Face GPT-2 checkpoints in and out (bin/hf_gpt2, llmc/interop/safetensors.c,
# llmc/interop/hf_gpt2.c) against dev/reference/hf_gpt2.py, an independent writer and
# reader of the format and the name / Conv1D mapping:
#   import: f32 with and without the "transformer." prefix, 3 shards with an
#     index, a stored tied lm_head, f16 and bf16 -> the weights equal the
#     independent conversion bit for bit, and test_gpt2 checks the imported
#     model's logits, loss and gradients against the PyTorch reference state;
#   export: bit for bit the independent layout, config.json, round trip exact;
#   a cbwc model (random, and trained by train_gpt2) exports as a LayerNorm
#     GPT-2 whose reference logits and gradients equal our cbwc forward's;
#   an rms model and bad files are refused with the file named, exit 1.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/hf_safetensors
rm -rf "$work"; mkdir -p "$work"
PY=${PYTHON:-/usr/bin/python3}
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
s=$(( seed % 1000000 ))
echo "hf_safetensors: seed $seed"
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
hf() { $PY dev/reference/hf_gpt2.py "$@"; }
# two model files equal but for header slots 254-255: ours carry a CRC there
# (docs/formats.md, tested in file_integrity), the independent writer's none
same_model() { cmp -s <(head -c 1016 "$1"; tail -c +1025 "$1") <(head -c 1016 "$2"; tail -c +1025 "$2"); }
ref() { $PY dev/reference/gpt2.py "$@" > /dev/null; }

ref --mode ln --seed $s --L 2 --C 64 --NH 4 --V 500 --Vp 512 --maxT 32 --model "$work/ln.bin" \
    --state "$work/ln_state.bin" || { echo "FAIL reference model"; exit 1; }
hf to-hf "$work/ln.bin" "$work/hf_plain" && hf from-hf "$work/hf_plain" "$work/expected.bin" ||
    { echo "FAIL independent conversion"; exit 1; }

# import: every variant gives the same bytes as the independent conversion
import_case() { # NAME TO_HF_FLAGS...
    local name=$1; shift
    hf to-hf "$work/ln.bin" "$work/hf_$name" "$@" && bin/hf_gpt2 import "$work/hf_$name" "$work/imp_$name.bin" \
        > "$work/imp_$name.out" 2>&1 && same_model "$work/imp_$name.bin" "$work/expected.bin" &&
        ok "import $name: bit for bit" || bad "import $name: $(cat "$work/imp_$name.out")"
}
import_case f32
import_case noprefix --prefix ""
import_case shards --shards 3
import_case lm_head --lm-head
if bin/test_gpt2 "$work/imp_f32.bin" "$work/ln_state.bin" > "$work/t.out" 2>&1; then
    ok "imported model vs the PyTorch reference: $(tail -1 "$work/t.out")"
else bad "imported model vs reference: $(tail -5 "$work/t.out")"; fi
for dt in f16 bf16; do
    hf to-hf "$work/ln.bin" "$work/hf_$dt" --dtype $dt && hf round-dtype "$work/ln.bin" "$work/round_$dt.bin" --dtype $dt &&
        hf to-hf "$work/round_$dt.bin" "$work/hf_round_$dt" && hf from-hf "$work/hf_round_$dt" "$work/exp_$dt.bin" &&
        bin/hf_gpt2 import "$work/hf_$dt/model.safetensors" "$work/imp_$dt.bin" > /dev/null 2>&1 &&
        same_model "$work/imp_$dt.bin" "$work/exp_$dt.bin" && ok "import $dt (a file path): exact conversion" ||
        bad "import $dt"
done

# export: the independent layout bit for bit; import of the export is the same model
bin/hf_gpt2 export "$work/ln.bin" "$work/exp_ln" > /dev/null 2>&1 && hf check-export "$work/ln.bin" "$work/exp_ln" \
    > "$work/chk.out" 2>&1 && ok "export ln: $(cat "$work/chk.out")" || bad "export ln: $(cat "$work/chk.out")"
bin/hf_gpt2 import "$work/exp_ln" "$work/rt.bin" > /dev/null 2>&1 && same_model "$work/rt.bin" "$work/expected.bin" &&
    ok "round trip export -> import: bit for bit" || bad "round trip"

# cbwc: the export is the LayerNorm GPT-2 of the proxy weights, the same function
cbwc_case() { # NAME MODEL.bin: export, LN reference state of the export, our cbwc model checked against it
    local name=$1 model=$2
    bin/hf_gpt2 export "$model" "$work/exp_$name" > "$work/exp_$name.out" 2>&1 &&
        grep -q "identical logits" "$work/exp_$name.out" &&
        hf from-hf "$work/exp_$name" "$work/${name}_as_ln.bin" &&
        ref --load "$work/${name}_as_ln.bin" --mode ln --seed $((s + 7)) --B 2 --T 16 --state "$work/${name}_state.bin" &&
        bin/test_gpt2 "$model" "$work/${name}_state.bin" > "$work/$name.out" 2>&1 &&
        ok "$name: our cbwc logits, loss, gradients == the exported LN GPT-2's reference" ||
        bad "$name: $(tail -5 "$work/$name.out" 2>/dev/null)"
}
ref --mode cbwc --seed $((s + 3)) --L 2 --C 64 --NH 4 --V 500 --Vp 512 --maxT 32 --model "$work/cbwc.bin"
cbwc_case cbwc_random "$work/cbwc.bin"
cat llmc/*/*.c > "$work/text.txt"
bin/text_to_shard "$work/text.txt" "$work/src" 0.1 > /dev/null &&
    bin/train_gpt2 -N cbwc -e d2c64h4v256t32 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin" -b 2 -t 16 \
        -x 6 -n 6 -v 0 -sd $((s % 1000)) -o "$work/run" > "$work/train.out" 2>&1 ||
    bad "training a cbwc model: $(tail -3 "$work/train.out")"
cbwc_case cbwc_trained "$work/run/model_00000006.bin"

expect_error() { # NAME PATTERN COMMAND...
    local name=$1 pattern=$2; shift 2
    local out rc
    out=$("$@" 2>&1); rc=$?
    if [ $rc -eq 1 ] && grep -q -- "$pattern" <<< "$out"; then ok "$name"; else bad "$name (exit $rc): $out"; fi
}
ref --mode rms --seed $s --L 1 --C 32 --NH 2 --V 64 --Vp 128 --maxT 8 --B 1 --T 8 --model "$work/rms.bin"
expect_error "rms model refused" "rms models have no LayerNorm" bin/hf_gpt2 export "$work/rms.bin" "$work/exp_rms"

# bad files: each a small change of a good one
$PY - "$work" <<'PYEOF'
import json, os, shutil, struct, sys
w = sys.argv[1]
src = os.path.join(w, "hf_f32")
data = open(os.path.join(src, "model.safetensors"), "rb").read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
def case(name, blob=None, header_obj=None, config=None, extra=None):
    d = os.path.join(w, "bad_" + name)
    shutil.copytree(src, d)
    if header_obj is not None:
        h = json.dumps(header_obj).encode(); h += b" " * (-len(h) % 8)
        blob = struct.pack("<Q", len(h)) + h + data[8 + n:]
    if blob is not None:
        open(os.path.join(d, "model.safetensors"), "wb").write(blob)
    if config is not None:
        c = json.load(open(os.path.join(d, "config.json"))); c.update(config)
        json.dump(c, open(os.path.join(d, "config.json"), "w"))
    if extra:
        extra(d)
def edit(fn):
    h = json.loads(json.dumps(header)); fn(h); return h
case("truncated", blob=data[:len(data) - 100])
case("huge_header_len", blob=struct.pack("<Q", 1 << 40) + data[8:])
case("not_json", blob=struct.pack("<Q", n) + b"{" + b"x" * (n - 1) + data[8 + n:])
case("trailing_data", blob=data + b"\0" * 16)
case("gap", header_obj=edit(lambda h: h["transformer.ln_f.bias"]["data_offsets"].__setitem__(0, h["transformer.ln_f.bias"]["data_offsets"][0] + 4) or h["transformer.ln_f.bias"]["shape"].__setitem__(0, h["transformer.ln_f.bias"]["shape"][0] - 1)))
case("wrong_shape", header_obj=edit(lambda h: h["transformer.ln_f.bias"].__setitem__("shape", [32, 2])))
case("bad_dtype", header_obj=edit(lambda h: h["transformer.ln_f.bias"].__setitem__("dtype", "Q9")))
case("int_dtype", header_obj=edit(lambda h: h["transformer.ln_f.bias"].__setitem__("dtype", "I32")))
case("missing", header_obj=edit(lambda h: h.__setitem__("transformer.ln_f.bias_x", h.pop("transformer.ln_f.bias"))))
case("eps", config={"layer_norm_epsilon": 1e-6})
case("relu", config={"activation_function": "relu"})
case("no_config", extra=lambda d: os.remove(os.path.join(d, "config.json")))
case("untied", extra=None)
PYEOF
$PY - "$work" <<'PYEOF'
import os, sys
sys.path.insert(0, "dev/reference")
import hf_gpt2 as h
w = sys.argv[1]
_, t = h.read_safetensors(os.path.join(w, "hf_f32", "model.safetensors"))
t = dict(t); t["lm_head.weight"] = t["transformer.wte.weight"] * 2
h.write_safetensors(os.path.join(w, "bad_untied", "model.safetensors"), t)
t.pop("lm_head.weight"); t["transformer.h.9.ln_1.weight"] = t["transformer.ln_f.weight"]
os.makedirs(os.path.join(w, "bad_unknown")); h.write_safetensors(os.path.join(w, "bad_unknown", "model.safetensors"), t)
import shutil; shutil.copy(os.path.join(w, "hf_f32", "config.json"), os.path.join(w, "bad_unknown"))
shutil.copytree(os.path.join(w, "hf_shards"), os.path.join(w, "bad_index"))
p = os.path.join(w, "bad_index", "model.safetensors.index.json")
text = open(p).read()
open(p, "w").write(text.replace("model-00001-of-00003", "../model-00001-of-00003", 1))
PYEOF
b=$work
expect_error "truncated file" "bad_truncated.*run past" bin/hf_gpt2 import "$b/bad_truncated" "$b/o.bin"
expect_error "header length past the end" "header length" bin/hf_gpt2 import "$b/bad_huge_header_len" "$b/o.bin"
expect_error "malformed JSON header" "malformed JSON" bin/hf_gpt2 import "$b/bad_not_json" "$b/o.bin"
expect_error "data after the last tensor" "after the last tensor" bin/hf_gpt2 import "$b/bad_trailing_data" "$b/o.bin"
expect_error "gap between tensors" "gap" bin/hf_gpt2 import "$b/bad_gap" "$b/o.bin"
expect_error "wrong shape" "ln_f.bias.*shape" bin/hf_gpt2 import "$b/bad_wrong_shape" "$b/o.bin"
expect_error "unknown dtype" "unknown dtype" bin/hf_gpt2 import "$b/bad_bad_dtype" "$b/o.bin"
expect_error "integer tensor" "dtype I32" bin/hf_gpt2 import "$b/bad_int_dtype" "$b/o.bin"
expect_error "renamed tensor" "unexpected tensor" bin/hf_gpt2 import "$b/bad_missing" "$b/o.bin"
expect_error "layer-norm epsilon" "layer_norm_epsilon" bin/hf_gpt2 import "$b/bad_eps" "$b/o.bin"
expect_error "activation" "activation_function" bin/hf_gpt2 import "$b/bad_relu" "$b/o.bin"
expect_error "no config.json" "config.json" bin/hf_gpt2 import "$b/bad_no_config" "$b/o.bin"
expect_error "untied lm_head" "untied" bin/hf_gpt2 import "$b/bad_untied" "$b/o.bin"
expect_error "a layer beyond n_layer" "unexpected tensor 'transformer.h.9" bin/hf_gpt2 import "$b/bad_unknown" "$b/o.bin"
expect_error "index escaping its folder" "not a file name" bin/hf_gpt2 import "$b/bad_index" "$b/o.bin"
[ ! -e "$b/o.bin" ] && ok "no output file after the errors" || bad "an error left $b/o.bin"
[ $fails -eq 0 ]
