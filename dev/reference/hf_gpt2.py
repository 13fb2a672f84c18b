#!/usr/bin/python3
"""Independent Hugging Face GPT-2 layout for the safetensors tests.

A writer and reader of safetensors written here from the format's definition
(8-byte little-endian header length, JSON header, raw little-endian tensors),
and the name / Conv1D mapping of transformers' GPT2LMHeadModel, with no code
shared with the C side:

  to-hf MODEL.bin DIR [--prefix P] [--shards N] [--dtype f32|f16|bf16] [--lm-head]
      our model file (read by gpt2.py's reader) -> DIR/model.safetensors or N
      shards + model.safetensors.index.json, and DIR/config.json
  check-export MODEL.bin DIR
      DIR (written by bin/hf_gpt2 export) holds exactly MODEL.bin's weights in
      Hugging Face's layout, bit for bit, and a config.json that matches
  from-hf DIR OUT.bin --mode ln
      the reverse, for the logits checks (padded vocabulary rows zero)
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2 as ref  # noqa: E402  (the reference's model-file reader and writer)

LAYER = ("ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
         "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
         "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias")
OURS = ("ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb", "ln2w", "ln2b",
        "fcw", "fcb", "fcprojw", "fcprojb")
CONV1D = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")


def hf_tensors(cfg, p):
    """Our parameters (gpt2.py's dict) -> {HF name without prefix: float32 array}."""
    out = {"wte.weight": p["wte"][:cfg["V"]], "wpe.weight": p["wpe"],
           "ln_f.weight": p["lnfw"], "ln_f.bias": p["lnfb"]}
    for l in range(cfg["L"]):
        for hf, ours in zip(LAYER, OURS):
            t = p[ours][l]
            out[f"h.{l}.{hf}"] = t.T if hf in CONV1D else t    # Conv1D stores [in, out]
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in out.items()}


def encode(a, dtype):
    if dtype == "f32":
        return "F32", a.astype("<f4").tobytes()
    if dtype == "f16":
        return "F16", a.astype("<f2").tobytes()
    bits = a.astype("<f4").view("<u4")                 # bf16: round to nearest even
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2")
    return "BF16", rounded.tobytes()


def decoded(a, dtype):
    """What a reader gets back from encode(a, dtype), as float32."""
    if dtype == "f32":
        return a
    if dtype == "f16":
        return a.astype(np.float16).astype(np.float32)
    _, raw = encode(a, "bf16")
    return (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32).reshape(a.shape)


def write_safetensors(path, tensors, dtype="f32"):
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, a in tensors.items():
        code, raw = encode(a, dtype)
        header[name] = {"dtype": code, "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_safetensors(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base, out = 8 + n, {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, c = e["data_offsets"]
        assert e["dtype"] == "F32", f"{path}: {name} is {e['dtype']}"
        out[name] = np.frombuffer(data[base + b:base + c], "<f4").reshape(e["shape"])
    return header.get("__metadata__"), out


def config_json(cfg):
    return {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": cfg["V"],
            "n_positions": cfg["maxT"], "n_ctx": cfg["maxT"], "n_embd": cfg["C"],
            "n_layer": cfg["L"], "n_head": cfg["NH"], "n_inner": None,
            "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
            "tie_word_embeddings": True}


def to_hf(a):
    cfg, _, p = ref.read_model(a.model)
    t = hf_tensors(cfg, p)
    if a.lm_head:
        t["lm_head.weight"] = t["wte.weight"].copy()
    t = {(a.prefix + k if not k.startswith("lm_head") else k): v for k, v in t.items()}
    os.makedirs(a.dir, exist_ok=True)
    json.dump(config_json(cfg), open(os.path.join(a.dir, "config.json"), "w"))
    names = list(t)
    if a.shards == 1:
        write_safetensors(os.path.join(a.dir, "model.safetensors"), t, a.dtype)
        return
    weight_map = {}
    for s in range(a.shards):
        part = names[s::a.shards]
        file = f"model-{s + 1:05d}-of-{a.shards:05d}.safetensors"
        write_safetensors(os.path.join(a.dir, file), {k: t[k] for k in part}, a.dtype)
        weight_map.update({k: file for k in part})
    json.dump({"metadata": {}, "weight_map": weight_map},
              open(os.path.join(a.dir, "model.safetensors.index.json"), "w"))


def check_export(a):
    cfg, _, p = ref.read_model(a.model)
    meta, got = read_safetensors(os.path.join(a.dir, "model.safetensors"))
    want = {"transformer." + k: v for k, v in hf_tensors(cfg, p).items()}
    fails = []
    if meta != {"format": "pt"}:
        fails.append(f"metadata {meta}, want {{'format': 'pt'}} (transformers requires it)")
    if set(got) != set(want):
        fails.append(f"names differ: extra {sorted(set(got) - set(want))[:4]}, "
                     f"missing {sorted(set(want) - set(got))[:4]}")
    for k in sorted(set(got) & set(want)):
        if got[k].shape != want[k].shape or got[k].tobytes() != want[k].tobytes():
            fails.append(f"{k}: shape {got[k].shape} vs {want[k].shape}, or values differ")
    c = json.load(open(os.path.join(a.dir, "config.json")))
    for k, v in config_json(cfg).items():
        if c.get(k) != v:
            fails.append(f"config.json {k}: {c.get(k)!r}, want {v!r}")
    for f in fails[:10]:
        print("FAIL", f)
    if fails:
        sys.exit(1)
    print(f"export matches: {len(want)} tensors bit for bit, config.json")


def from_hf(a):
    c = json.load(open(os.path.join(a.dir, "config.json")))
    _, t = read_safetensors(os.path.join(a.dir, "model.safetensors"))
    t = {k[len("transformer."):] if k.startswith("transformer.") else k: v for k, v in t.items()}
    V, C, L = c["vocab_size"], c["n_embd"], c["n_layer"]
    cfg = dict(V=V, Vp=(V + 127) // 128 * 128, maxT=c["n_positions"], L=L, NH=c["n_head"], C=C)
    model = ref.GPT(mode=a.mode, **cfg)
    wte = np.zeros((cfg["Vp"], C), np.float32)
    wte[:V] = t["wte.weight"]
    vals = {"wte": wte, "wpe": t["wpe.weight"], "lnfw": t["ln_f.weight"], "lnfb": t["ln_f.bias"]}
    for hf, ours in zip(LAYER, OURS):
        vals[ours] = np.stack([t[f"h.{l}.{hf}"].T if hf in CONV1D else t[f"h.{l}.{hf}"]
                               for l in range(L)])
    import torch
    with torch.no_grad():
        for name, prm in model.params():
            prm.copy_(torch.from_numpy(np.array(vals[name], dtype=np.float32)))
    ref.write_model(a.out, model)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("to-hf")
    s.add_argument("model"), s.add_argument("dir")
    s.add_argument("--prefix", default="transformer.")
    s.add_argument("--shards", type=int, default=1)
    s.add_argument("--dtype", choices=("f32", "f16", "bf16"), default="f32")
    s.add_argument("--lm-head", action="store_true", help="also store the tied lm_head.weight")
    s = sub.add_parser("check-export")
    s.add_argument("model"), s.add_argument("dir")
    s = sub.add_parser("from-hf")
    s.add_argument("dir"), s.add_argument("out")
    s.add_argument("--mode", choices=ref.MODES, default="ln")
    s = sub.add_parser("round-dtype", help="MODEL.bin OUT.bin: weights as the dtype stores them")
    s.add_argument("model"), s.add_argument("out")
    s.add_argument("--dtype", choices=("f16", "bf16"), required=True)
    a = ap.parse_args()
    if a.cmd == "round-dtype":  # the model a reader of an f16/bf16 export sees
        cfg, mode, p = ref.read_model(a.model)
        model = ref.GPT(mode=mode, **cfg)
        import torch
        with torch.no_grad():
            for name, prm in model.params():
                v = decoded(p[name], a.dtype)
                if name == "wte":
                    v = v.copy()
                    v[cfg["V"]:] = 0
                prm.copy_(torch.from_numpy(np.array(v, dtype=np.float32)))
        ref.write_model(a.out, model)
        return
    {"to-hf": to_hf, "check-export": check_export, "from-hf": from_hf}[a.cmd](a)


if __name__ == "__main__":
    main()
