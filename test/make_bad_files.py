#!/usr/bin/python3
"""Writes the bad-file corpus (issue 7) for test/suites/bad_files.sh.

    make_bad_files.py GOOD_DIR OUT_DIR

GOOD_DIR holds valid files written by the project's own tools (bad_files.sh
makes them: PyTorch-reference models and debug states, a folded model, a
checkpoint, KJV and SFT shards, tokenizer files, Fashion-MNIST IDX slices,
image shards of real JPEGs, a graph). For every format this writes variants
that must be rejected: truncated at every header boundary and inside the
payload, wrong magic, wrong version, sizes that overflow 32 bits, negative and
huge dimensions, NaN / inf weights, out-of-range ids, trailing data, ... and
OUT_DIR/manifest.tsv, one case a line:

    NAME <TAB> CONSUMER <TAB> PATH <TAB> EXPECT

CONSUMER names the program that reads PATH (bad_files.sh maps it to a command
line); EXPECT is "ok" for the untouched baselines (exit 0), otherwise an
extended regex the error must match (by default the file's name: every error
names its file), with exit status 1.
"""
import gzip
import json
import os
import shutil
import struct
import sys
import zlib

GOOD, OUT = sys.argv[1], sys.argv[2]
cases = []

I32_MAX, I32_MIN = 2**31 - 1, -2**31


def read(name):
    with open(os.path.join(GOOD, name), "rb") as f:
        return f.read()


def path_of(fmt, name, suffix=""):
    d = os.path.join(OUT, fmt)
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, name + suffix)


CRC_KIND = 0x31435243  # header slot 254 of a checksummed file (docs/formats.md)


def with_crc(data):
    """The file with header slots 254-255 = the CRC32 kind and the zlib CRC32
    of the file read with those two slots as zero (docs/formats.md), written
    here independently of llmc/core/checksum.c."""
    b = bytearray(data)
    b[1016:1024] = bytes(8)
    struct.pack_into("<iI", b, 1016, CRC_KIND, zlib.crc32(b))
    return bytes(b)


def fix_crc(data):
    """A variant of a checksummed file gets a valid CRC again, so that each
    case reaches the check it is about (the checksum cases keep it stale)."""
    if len(data) >= 1024 and struct.unpack_from("<i", data, 1016)[0] == CRC_KIND:
        return with_crc(data)
    return data


def flip_byte(data, offset):
    b = bytearray(data)
    b[offset] ^= 0x10
    return bytes(b)


def case(fmt, name, consumer, data, suffix=".bin", expect=None, stale_crc=False):
    """One bad file; EXPECT defaults to its own file name."""
    p = path_of(fmt, name, suffix)
    with open(p, "wb") as f:
        f.write(data if stale_crc else fix_crc(data))
    cases.append((f"{fmt}/{name}", consumer, p, expect or f"{fmt}/{os.path.basename(p)}"))
    return p


def set_i32(data, slot, value, offset=0):
    b = bytearray(data)
    struct.pack_into("<i", b, offset + 4 * slot, value)
    return bytes(b)


def set_f32(data, index, value, offset=1024):
    b = bytearray(data)
    struct.pack_into("<f", b, offset + 4 * index, value)
    return bytes(b)


def truncations(fmt, consumer, data, used_slots, payload_points=(), suffix=".bin", header=1024):
    """Cut at every header slot boundary up to the last used slot, at the
    header's end, and inside the payload."""
    cuts = sorted(set([0, 1, 2, 3] + [4 * k for k in range(used_slots + 1)] +
                      [header - 1, header, header + 1] + list(payload_points) + [len(data) - 1]))
    for n in cuts:
        if 0 <= n < len(data):
            case(fmt, f"trunc_{n}", consumer, data[:n], suffix)


def slot_values(fmt, consumer, data, slot, label, values):
    for v in values:
        tag = str(v).replace("-", "neg")
        case(fmt, f"{label}_{tag}", consumer, set_i32(data, slot, v))


# ---------------------------------------------------------------- GPT-2 model
model = read("gpt2.bin")          # L=1 C=8 NH=2 V=256 Vp=256 maxT=8, ln
folded = read("gpt2_folded.bin")
nparams = (len(model) - 1024) // 4
cases.append(("gpt2_model/good", "gpt2_model", os.path.join(GOOD, "gpt2.bin"), "ok"))
cases.append(("gpt2_model/good_folded", "gpt2_model_test", os.path.join(GOOD, "gpt2_folded.bin"), "ok"))
truncations("gpt2_model", "gpt2_model", model, 9, (1024 + 4 * 100, len(model) // 2, len(model) - 4))
case("gpt2_model", "empty", "gpt2_model", b"")
case("gpt2_model", "trailing_byte", "gpt2_model", model + b"\0", expect="trailing data")
case("gpt2_model", "trailing_float", "gpt2_model", model + bytes(4), expect="trailing data")
slot_values("gpt2_model", "gpt2_model", model, 0, "magic", [20240327, 0, -1, 20261129])
slot_values("gpt2_model", "gpt2_model", model, 1, "version", [5, 1, 0, -1, 4])
for slot, dim in ((2, "maxT"), (3, "V"), (4, "L"), (5, "NH"), (6, "C"), (7, "Vp")):
    slot_values("gpt2_model", "gpt2_model", model, slot, dim, [0, -1, I32_MIN, I32_MAX, 1 << 24 | 1])
b = set_i32(set_i32(model, 3, 300), 7, 256)
case("gpt2_model", "V_above_Vp", "gpt2_model", b, expect="exceeds the padded vocab")
case("gpt2_model", "C_not_multiple_of_NH", "gpt2_model", set_i32(model, 5, 3), expect="multiple")
# sizes whose products overflow 32 bits (and the file is far too small)
b = set_i32(set_i32(model, 6, 65536), 5, 1)
case("gpt2_model", "C_65536", "gpt2_model", b, expect="truncated")
b = set_i32(set_i32(set_i32(model, 6, 65536), 5, 1), 2, 1 << 20)
case("gpt2_model", "maxT_C_2pow36", "gpt2_model", b, expect="truncated")
b = set_i32(set_i32(set_i32(set_i32(model, 6, 65536), 5, 1), 4, 4096), 7, 1 << 24)
case("gpt2_model", "L4096_C65536_Vp2pow24", "gpt2_model", set_i32(b, 3, 1 << 24), expect="truncated")
slot_values("gpt2_model", "gpt2_model", model, 8, "mode", [4, 7, -1, I32_MAX])
# non-finite weights: the error names the tensor
case("gpt2_model", "nan_wte", "gpt2_model", set_f32(model, 5, float("nan")), expect="nan_wte.bin.*wte.*not finite")
case("gpt2_model", "inf_qkvw", "gpt2_model",
     set_f32(model, 256 * 8 + 8 * 8 + 16 + 7, float("inf")), expect="inf_qkvw.bin.*qkvw.*not finite")
case("gpt2_model", "neg_inf_lnfb", "gpt2_model", set_f32(model, nparams - 1, float("-inf")),
     expect="neg_inf_lnfb.bin.*lnfb.*not finite")
# the same defects through the other programs that read model files
for consumer in ("gpt2_model_fold", "gpt2_model_sample", "gpt2_model_test"):
    tag = consumer.split("_")[-1]
    case("gpt2_model", f"{tag}_magic", consumer, set_i32(model, 0, 1234))
    case("gpt2_model", f"{tag}_truncated", consumer, model[:len(model) // 2])
    case("gpt2_model", f"{tag}_nan", consumer, set_f32(model, 100, float("nan")),
         expect=f"{tag}_nan.bin.*not finite")
# checksums (header slots 254-255): the reference's model with a CRC added
# here loads; a flipped bit with the sizes intact is refused, in the payload
# or in a header slot whose new value is valid, as is an unknown kind
case("gpt2_model", "crc_good", "gpt2_model", with_crc(model), expect="ok")
for consumer in ("gpt2_model", "gpt2_model_fold", "gpt2_model_sample", "gpt2_model_test"):
    tag = consumer.split("_")[-1]
    case("gpt2_model", f"crc_{tag}_flipped_weight", consumer, flip_byte(with_crc(model), 1024 + 4 * 77 + 1),
         expect=f"crc_{tag}_flipped_weight.bin: checksum mismatch: stored [0-9a-f]{{8}}, computed", stale_crc=True)
case("gpt2_model", "crc_flipped_mode_slot", "gpt2_model", set_i32(with_crc(model), 8, 1),
     expect="crc_flipped_mode_slot.bin: checksum mismatch", stale_crc=True)
case("gpt2_model", "crc_flipped_last_byte", "gpt2_model", flip_byte(with_crc(model), len(model) - 1),
     expect="crc_flipped_last_byte.bin: checksum mismatch", stale_crc=True)
case("gpt2_model", "crc_unknown_kind", "gpt2_model", set_i32(with_crc(model), 254, CRC_KIND ^ 1),
     expect="crc_unknown_kind.bin: unknown checksum kind", stale_crc=True)
case("gpt2_model", "crc_flag_cleared_stale_value", "gpt2_model", set_i32(with_crc(model), 254, 7),
     expect="unknown checksum kind", stale_crc=True)

# folded files: slots 9, 10 and the row means after the parameters
nf = (len(folded) - 1024) // 4
truncations("gpt2_folded", "gpt2_model_test", folded, 11, (len(folded) - 4 * 256, len(folded) - 4))
slot_values("gpt2_folded", "gpt2_model_test", folded, 9, "norms", [0, 2, 4, -1, I32_MAX])
slot_values("gpt2_folded", "gpt2_model_test", folded, 10, "layers", [0, 14, 16, -1])
case("gpt2_folded", "ln_sized", "gpt2_model_test", folded[:len(folded) - 4 * 256], expect="truncated")
case("gpt2_folded", "nan_row_mean", "gpt2_model_test", set_f32(folded, nf - 3, float("nan")),
     expect="nan_row_mean.bin.*row mean.*not finite")
case("gpt2_folded", "folded_to_train", "gpt2_model", folded, expect="folded|inference")
case("gpt2_folded", "crc_flipped_row_mean", "gpt2_model_test", flip_byte(folded, len(folded) - 5),
     expect="crc_flipped_row_mean.bin: checksum mismatch", stale_crc=True)

# ---------------------------------------------------------------- GPT-2 debug state
state = read("gpt2_state.bin")    # B=1 T=4 N=2 for gpt2.bin
cases.append(("debug_state/good", "debug_state", os.path.join(GOOD, "gpt2_state.bin"), "ok"))
truncations("debug_state", "debug_state", state, 11, (1024 + 4, 1024 + 32 + 4, len(state) // 2))
case("debug_state", "trailing", "debug_state", state + bytes(4))
slot_values("debug_state", "debug_state", state, 0, "magic", [20240326, 0])
slot_values("debug_state", "debug_state", state, 1, "version", [1, 3, -1])
slot_values("debug_state", "debug_state", state, 2, "B", [0, -1, I32_MIN, (1 << 16) + 1, I32_MAX])
slot_values("debug_state", "debug_state", state, 3, "T", [0, -1, 9, I32_MAX])
slot_values("debug_state", "debug_state", state, 4, "steps", [-1, (1 << 20) + 1, I32_MAX, 3])
# the largest B*T this model allows: a 2^29-byte file announced, a few KB present
case("debug_state", "B65536_T8", "debug_state", set_i32(set_i32(state, 2, 65536), 3, 8))
case("debug_state", "x_out_of_vocab", "debug_state", set_i32(state, 0, 256, offset=1024), expect="out of range")
case("debug_state", "x_negative", "debug_state", set_i32(state, 1, -1, offset=1024), expect="out of range")
case("debug_state", "y_below_minus_1", "debug_state", set_i32(state, 0, -2, offset=1024 + 16), expect="out of range")

# ---------------------------------------------------------------- training state (checkpoint)
ck_model = read("ckpt/model_00000001.bin")
ck_state = read("ckpt/state_00000001.bin")


def ckpt_case(name, state_bytes, expect=None, model_bytes=None, stale_crc=False):
    d = path_of("train_state", name)
    os.makedirs(d, exist_ok=True)
    fix = (lambda b: b) if stale_crc else fix_crc
    with open(os.path.join(d, "model_00000001.bin"), "wb") as f:
        f.write(fix(ck_model if model_bytes is None else model_bytes))
    with open(os.path.join(d, "state_00000001.bin"), "wb") as f:
        f.write(fix(state_bytes))
    cases.append((f"train_state/{name}", "train_state", d,
                  expect or f"{name}/{'model' if model_bytes is not None else 'state'}_00000001.bin"))


cases.append(("train_state/good", "train_state", os.path.join(GOOD, "ckpt"), "ok"))
for n in sorted(set([0, 3, 4, 8, 12, 20, 28, 36, 44, 48, 52, 1023, 1024, 1028, len(ck_state) // 2,
                     len(ck_state) - 1])):
    ckpt_case(f"trunc_{n}", ck_state[:n])
ckpt_case("trailing", ck_state + bytes(8))
ckpt_case("magic", set_i32(ck_state, 0, 20240326))
ckpt_case("version", set_i32(ck_state, 1, 2))
ckpt_case("step_mismatch", set_i32(ck_state, 2, 2))
ckpt_case("adamw_step_negative", set_i32(ck_state, 3, -1))
ckpt_case("shard_negative", set_i32(ck_state, 4, -5))
ckpt_case("params_mismatch", set_i32(ck_state, 9, 12345))
ckpt_case("params_2pow32", set_i32(set_i32(ck_state, 9, 0), 10, 1))
ckpt_case("moments_flag_2", set_i32(ck_state, 11, 2))
ckpt_case("moments_flag_0_with_moments", set_i32(ck_state, 11, 0))
ckpt_case("epoch_negative", set_i32(ck_state, 12, -1))
ckpt_case("nan_m", set_f32(ck_state, 3, float("nan")))
ckpt_case("negative_v", set_f32(ck_state, (len(ck_state) - 1024) // 8 + 3, -1.0))
ck_params = struct.unpack_from("<q", ck_state, 4 * 9)[0]  # slots 9-10
ckpt_case("inf_v", set_f32(ck_state, 2 * ck_params - 1, float("inf")))  # v's last
# the -sl / -sg windows (slots 14-16, then 2 x slot 14 float64 after the moments)
ckpt_case("window_count_129", set_i32(ck_state, 14, 129))
ckpt_case("window_count_negative", set_i32(ck_state, 14, -1))
ckpt_case("window_next_before_full", set_i32(ck_state, 15, 1))
ckpt_case("skipped_past_step", set_i32(ck_state, 16, 2))
ckpt_case("window_count_no_values", set_i32(ck_state, 14, 3))
window_nan = bytearray(ck_state)
struct.pack_into("<d", window_nan, len(ck_state) - 8, float("nan"))
ckpt_case("window_nan", bytes(window_nan))
# a data position outside the shards: the loader refuses to resume
ckpt_case("shard_cursor_past_end", set_i32(ck_state, 4, 7), expect="cannot resume")
ckpt_case("batch_cursor_huge", set_i32(set_i32(ck_state, 5, 0), 6, 1 << 30), expect="cannot resume")
ckpt_case("model_nan", ck_state, model_bytes=set_f32(ck_model, 9, float("nan")))
ckpt_case("model_truncated", ck_state, model_bytes=ck_model[:2000])
# checksums: a flipped bit in a moment, in a valid header value, in the model
ckpt_case("crc_flipped_moment", flip_byte(ck_state, 1024 + 4 * 5 + 2), stale_crc=True,
          expect="crc_flipped_moment/state_00000001.bin: checksum mismatch")
ckpt_case("crc_flipped_rng_slot", flip_byte(ck_state, 4 * 7), stale_crc=True,
          expect="crc_flipped_rng_slot/state_00000001.bin: checksum mismatch")
ckpt_case("crc_flipped_model", ck_state, model_bytes=flip_byte(ck_model, 1024 + 4 * 9), stale_crc=True,
          expect="crc_flipped_model/model_00000001.bin: checksum mismatch")

# ---------------------------------------------------------------- token shards
shard = read("bytes_shard.bin")   # a KJV byte-level slice, V = 256
ntok = (len(shard) - 1024) // 2
cases.append(("token_shard/good", "token_shard", os.path.join(GOOD, "bytes_shard.bin"), "ok"))
truncations("token_shard", "token_shard", shard, 3, (1024 + 2 * 10, len(shard) // 2))
case("token_shard", "trailing", "token_shard", shard + b"\0\0")
slot_values("token_shard", "token_shard", shard, 0, "magic", [20240326, 0, 20241203])
slot_values("token_shard", "token_shard", shard, 1, "version", [0, 2, -1])
slot_values("token_shard", "token_shard", shard, 2, "count", [-1, I32_MIN, I32_MAX, 1 << 30, ntok + 1, ntok - 1, 0])
case("token_shard", "too_few_tokens", "token_shard", set_i32(shard[:1024 + 2 * 4], 2, 4), expect="fewer than")
b = bytearray(shard)
struct.pack_into("<H", b, 1024 + 2 * 77, 256)
case("token_shard", "token_256", "token_shard", bytes(b), expect="token_256.bin.*token 256")
struct.pack_into("<H", b, 1024 + 2 * 77, 65535)
case("token_shard", "token_65535", "token_shard", bytes(b), expect="token 65535")

# ---------------------------------------------------------------- SFT shards
sft = read("sft_train_000000.bin")
nsft = (len(sft) - 1024) // 3
cases.append(("sft_shard/good", "sft_shard", os.path.join(GOOD, "sft_train_000000.bin"), "ok"))
truncations("sft_shard", "sft_shard", sft, 3, (1024 + 2 * nsft, 1024 + 2 * nsft + 1, len(sft) - 1))
case("sft_shard", "trailing", "sft_shard", sft + b"\0")
slot_values("sft_shard", "sft_shard", sft, 1, "version", [0, 2])
slot_values("sft_shard", "sft_shard", sft, 2, "count", [-1, I32_MAX, nsft + 1, nsft - 1])
case("sft_shard", "plain_sized_as_sft", "sft_shard", set_i32(sft, 0, 20240520), expect="bytes")
b = bytearray(sft)
b[1024 + 2 * nsft + 10] = 2
case("sft_shard", "mask_2", "sft_shard", bytes(b), expect="mask_2.bin.*loss mask 2")
b[1024 + 2 * nsft + 10] = 255
case("sft_shard", "mask_255", "sft_shard", bytes(b), expect="loss mask 255")
b = bytearray(sft)
struct.pack_into("<H", b, 1024 + 2 * 3, 50257)
case("sft_shard", "token_50257", "sft_shard", bytes(b), expect="token 50257")
# an SFT and a plain shard matched by one pattern
d = path_of("sft_shard", "mixed")
os.makedirs(d, exist_ok=True)
shutil.copy(os.path.join(GOOD, "sft_train_000000.bin"), os.path.join(d, "a_000.bin"))
shutil.copy(os.path.join(GOOD, "kjv_gpt2_shard.bin"), os.path.join(d, "b_001.bin"))
cases.append(("sft_shard/mixed_kinds", "sft_shard", os.path.join(d, "*.bin"), "b_001.bin.*plain token"))
cases.append(("sft_shard/plain_with_sft_flag", "sft_shard", os.path.join(GOOD, "kjv_gpt2_shard.bin"),
              "kjv_gpt2_shard.bin.*not SFT shards"))

# ---------------------------------------------------------------- tokenizer files
enc_text = read("gpt2/encoder.json")
bpe_text = read("gpt2/vocab.bpe")
enc = json.loads(enc_text)


def tok_case(name, encoder=None, merges=None, expect=None, missing=None):
    d = path_of("tokenizer", name)
    os.makedirs(d, exist_ok=True)
    for fname, data in (("encoder.json", encoder), ("vocab.bpe", merges)):
        target = os.path.join(d, fname)
        if fname == missing:
            continue
        if data is None:
            os.symlink(os.path.abspath(os.path.join(GOOD, "gpt2", fname)), target)
        else:
            with open(target, "wb") as f:
                f.write(data)
    bad = "encoder.json" if encoder is not None or missing == "encoder.json" else "vocab.bpe"
    cases.append((f"tokenizer/{name}", "tokenizer", d, expect or f"{name}/{bad}"))


def enc_with(change):
    e = dict(enc)
    change(e)
    return json.dumps(e, ensure_ascii=False).encode("utf-8")


cases.append(("tokenizer/good", "tokenizer", os.path.join(GOOD, "gpt2"), "ok"))
for n in (0, 1, 2, 1000, len(enc_text) // 2, len(enc_text) - 1):
    tok_case(f"encoder_trunc_{n}", encoder=enc_text[:n])
tok_case("encoder_missing", missing="encoder.json", expect="encoder_missing/encoder.json: cannot open")
tok_case("merges_missing", missing="vocab.bpe", expect="merges_missing/vocab.bpe: cannot open")
tok_case("encoder_list", encoder=b"[1, 2, 3]")
tok_case("encoder_number", encoder=b"42")
tok_case("encoder_empty_object", encoder=b"{}")
tok_case("encoder_nul_byte", encoder=enc_text[:100] + b"\0" + enc_text[101:])
tok_case("encoder_trailing_garbage", encoder=enc_text + b" {}", expect="trailing")
tok_case("id_fraction", encoder=enc_with(lambda e: e.__setitem__("!", 1.5)))
tok_case("id_negative", encoder=enc_with(lambda e: e.__setitem__("!", -1)))
tok_case("id_too_large", encoder=enc_with(lambda e: e.__setitem__("!", 50257)))
tok_case("id_huge", encoder=enc_with(lambda e: e.__setitem__("!", 1e300)))
tok_case("id_string", encoder=enc_with(lambda e: e.__setitem__("!", "0")))
tok_case("id_duplicate", encoder=enc_with(lambda e: e.__setitem__("!", 1)), expect="id 1 is given to two tokens")
tok_case("no_byte_token", encoder=enc_with(lambda e: (e.pop("!"), e.__setitem__("\u4e00", 0))))
tok_case("symbol_outside_alphabet", encoder=enc_with(lambda e: (e.pop("!"), e.__setitem__("\u0100\u4e00", 0))))
tok_case("no_endoftext", encoder=enc_with(lambda e: (e.pop("<|endoftext|>"), e.__setitem__("\u0120\u0120zz", 50256))))
tok_case("empty_token", encoder=enc_with(lambda e: (e.pop("\u0120\u0120zz", None), e.pop("!"), e.__setitem__("", 0))))
lines = bpe_text.split(b"\n")
tok_case("merges_empty", merges=b"")
tok_case("merges_only_version", merges=lines[0] + b"\n", expect="no merges")
tok_case("merge_one_token", merges=b"\n".join(lines[:4] + [b"onlyone"] + lines[5:]), expect="vocab.bpe:5: expected a merge")
tok_case("merge_three_tokens", merges=b"\n".join(lines[:4] + [b"a b c"] + lines[5:]))
tok_case("merge_unknown_token", merges=b"\n".join(lines[:2] + [b"\xc4\xa0t zzzzunknown"] + lines[3:]),
         expect="vocab.bpe:3: merge .* not in encoder.json")
tok_case("merge_nul_byte", merges=bpe_text[:200] + b"\0" + bpe_text[201:], expect="NUL byte")
tok_case("merge_too_long", merges=lines[0] + b"\n" + b"a" * 3000 + b" b\n")
tok_case("merges_binary", merges=bytes(range(256)) * 4)

# ---------------------------------------------------------------- Alpaca JSON
fixture = read("alpaca.json")
recs = json.loads(fixture)
cases.append(("alpaca/good", "alpaca", os.path.join(GOOD, "alpaca.json"), "ok"))
body = len(fixture.rstrip())  # cuts inside the JSON, not in its final newline
for n in (0, 1, 2, body // 3, body // 2, body - 2, body - 1):
    case("alpaca", f"trunc_{n}", "alpaca", fixture[:n], ".json")


def alpaca_case(name, value, expect=None):
    data = value if isinstance(value, bytes) else json.dumps(value).encode()
    case("alpaca", name, "alpaca", data, ".json", expect)


alpaca_case("object_not_list", {"instruction": "a", "output": "b"}, "expected a JSON list")
alpaca_case("empty_list", [], "no records")
alpaca_case("record_string", ["text"] + recs, "record 0 is not an object")
alpaca_case("record_list", recs + [[1, 2]], f"record {len(recs)} is not an object")
alpaca_case("no_instruction", [{"output": "b"}], "no_instruction.json.*record 0.*instruction")
alpaca_case("no_output", [{"instruction": "a"}], "record 0.*output")
alpaca_case("output_number", [{"instruction": "a", "output": 5}], "\"output\" is not a string")
alpaca_case("input_list", [{"instruction": "a", "input": ["x"], "output": "b"}], "\"input\" is not a string")
alpaca_case("instruction_null", [{"instruction": None, "output": "b"}], "instruction")
alpaca_case("nested_deep", b"[" * 5000 + b"]" * 5000, "malformed JSON")
alpaca_case("binary", bytes(range(256)), "malformed JSON")
alpaca_case("utf16_bom", b"\xff\xfe[\0]\0", "malformed JSON")
alpaca_case("trailing_garbage", fixture + b" x", "trailing")
alpaca_case("too_long_record", [{"instruction": "word " * 3000, "output": "b"}], "longer than the context")

# ---------------------------------------------------------------- IDX (Fashion-MNIST slices)
idx_names = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
             "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
idx_raw = {n: gzip.decompress(read(f"fmnist/{n}")) for n in idx_names}


def idx_case(name, which, data, expect=None, compress=True):
    d = path_of("idx", name)
    os.makedirs(d, exist_ok=True)
    for n in idx_names:
        target = os.path.join(d, n)
        if n == which:
            with open(target, "wb") as f:
                f.write(gzip.compress(data) if compress else data)
        else:
            os.symlink(os.path.abspath(os.path.join(GOOD, "fmnist", n)), target)
    cases.append((f"idx/{name}", "idx", d, expect or f"{name}/{which}"))


cases.append(("idx/good", "idx", os.path.join(GOOD, "fmnist"), "ok"))
img, lab = "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"
for n in (0, 1, 2, 3, 4, 5, 8, 12, 15, 16, 17, len(idx_raw[img]) - 1):
    idx_case(f"images_trunc_{n}", img, idx_raw[img][:n])
for n in (0, 4, 7, 8, len(idx_raw[lab]) - 1):
    idx_case(f"labels_trunc_{n}", lab, idx_raw[lab][:n])
idx_case("images_trailing", img, idx_raw[img] + b"\0", "trailing data")
idx_case("labels_trailing", lab, idx_raw[lab] + b"\7")
gz = read(f"fmnist/{img}")
idx_case("gzip_truncated", img, gz[:len(gz) // 2], compress=False)
idx_case("gzip_corrupt", img, gz[:len(gz) // 2] + bytes(64) + gz[len(gz) // 2 + 64:], compress=False)
idx_case("gzip_bad_crc", img, gz[:-8] + bytes(4) + gz[-4:], compress=False)
idx_case("gzip_trailing_garbage", img, gz + b"garbage", compress=False)
idx_case("gzip_header_only", img, gz[:10], compress=False)
idx_case("gzip_two_members_too_long", img, gz + gz, "trailing data", compress=False)
idx_case("raw_trailing", img, idx_raw[img] + b"x", "trailing data", compress=False)
for i, v in ((0, 1), (1, 1), (2, 0x09), (2, 0x0D), (3, 1), (3, 0), (3, 4)):
    b = bytearray(idx_raw[img])
    b[i] = v
    idx_case(f"images_magic_{i}_{v}", img, bytes(b), "not an IDX file")
for dim, vals in ((0, (0, 101, 1 << 24 | 1, 0xFFFFFFFF, 0x80000000)), (1, (0, 27, 4097, 0xFFFFFFFF)), (2, (0, 4096))):
    for v in vals:
        b = bytearray(idx_raw[img])
        struct.pack_into(">I", b, 4 + 4 * dim, v)
        idx_case(f"images_dim{dim}_{v}", img, bytes(b))
b = bytearray(idx_raw[img])  # 2^24 x 4096 x 4096: 2^48 bytes announced by a 16-byte header
struct.pack_into(">III", b, 4, 1 << 24, 4096, 4096)
idx_case("images_2pow48_bytes", img, bytes(b[:16]), "truncated")
b = bytearray(idx_raw[lab])
b[20] = 10
idx_case("label_10", lab, bytes(b), "label 10")
b[20] = 255
idx_case("label_255", lab, bytes(b), "label 255")
b = bytearray(idx_raw[lab][:8 + 99])
struct.pack_into(">I", b, 4, 99)
idx_case("count_mismatch", lab, bytes(b), "labels")

# ---------------------------------------------------------------- image shards
img_train, img_val = read("img_train.bin"), read("img_val.bin")


def shard_case(name, data, split="train", expect=None):
    prefix = path_of("image_shard", name)
    other = "val" if split == "train" else "train"
    with open(f"{prefix}_{split}.bin", "wb") as f:
        f.write(data)
    shutil.copy(os.path.join(GOOD, f"img_{other}.bin"), f"{prefix}_{other}.bin")
    if os.path.exists(os.path.join(GOOD, "img_classes.txt")):
        shutil.copy(os.path.join(GOOD, "img_classes.txt"), f"{prefix}_classes.txt")
    cases.append((f"image_shard/{name}", "image_shard", prefix, expect or f"{name}_{split}.bin"))


cases.append(("image_shard/good", "image_shard", os.path.join(GOOD, "img"), "ok"))
count, side = struct.unpack_from("<i", img_train, 8)[0], struct.unpack_from("<i", img_train, 16)[0]
for n in sorted(set([0, 3] + [4 * k for k in range(9)] + [1023, 1024, 1024 + 4 * count - 1,
                                                         1024 + 4 * count, len(img_train) - 1])):
    shard_case(f"trunc_{n}", img_train[:n])
shard_case("val_truncated", img_val[:len(img_val) // 2], split="val")
shard_case("trailing", img_train + b"\0")
for slot, label, vals in ((0, "magic", (20261202, 0)), (1, "version", (0, 2)),
                          (2, "count", (0, -1, I32_MIN, I32_MAX, count + 1)),
                          (3, "classes", (0, -1, (1 << 20) + 1)),
                          (4, "side", (0, -1, 4097, I32_MAX, side - 1)),
                          (5, "channels", (1, 4, 0)), (6, "kind", (2, -1)),
                          (7, "crop", (0, -1, side + 1))):
    for v in vals:
        shard_case(f"{label}_{str(v).replace('-', 'neg')}", set_i32(img_train, slot, v))
# count * side^2 * 3 > 2^32 and side at its bound: sizes that overflow 32 bits
shard_case("pixels_2pow40", set_i32(set_i32(img_train, 2, 1 << 16), 4, 4096), expect="truncated")
shard_case("eval_side_ne_crop", set_i32(img_val, 7, 1), split="val", expect="bad header")
shard_case("label_out_of_range", set_i32(img_train, 0, 2, offset=1024), expect="label 2 of image 0")
shard_case("label_negative", set_i32(img_train, 0, -1, offset=1024), expect="label -1")

# ---------------------------------------------------------------- vision models and states
for fam in ("vit", "swin"):
    m = read(f"{fam}.bin")
    nv = (len(m) - 1024) // 4
    consumer = f"vision_model_{fam}"
    cases.append((f"vision_model/{fam}_good", consumer, os.path.join(GOOD, f"{fam}.bin"), "ok"))
    truncations(f"vision_model_{fam}", consumer, m, 32, (1024 + 4 * 7, len(m) // 2, len(m) - 4))
    f = f"vision_model_{fam}"
    case(f, "trailing", consumer, m + bytes(4), expect="trailing data")
    slot_values(f, consumer, m, 0, "magic", [20240326, 0])
    slot_values(f, consumer, m, 1, "version", [0, 2])
    slot_values(f, consumer, m, 2, "family", [1 - (fam == "swin"), 2, -1])
    slot_values(f, consumer, m, 3, "mode", [4, -1])
    # mode 3 = folded must carry its RMS norm count in slot 14, other modes 0 there
    case(f, "folded_count0", consumer, set_i32(m, 3, 3),
         expect="folded_count0.bin: folded model records 0 folded norms in header slot 14")
    case(f, "ln_with_folded_count", consumer, set_i32(set_i32(m, 3, 0), 14, 3),
         expect="ln_with_folded_count.bin: ln model records 3 folded norms")
    # bin/fold reads vision models: the (cbwc) reference model folds, an rms one is refused
    cases.append((f"vision_model/{fam}_fold_good", "vision_model_fold",
                  os.path.join(GOOD, f"{fam}.bin"), "ok"))
    case(f, "fold_rms", "vision_model_fold", set_i32(m, 3, 1),
         expect="fold_rms.bin: norm mode is 'rms': nothing to fold")
    case(f, "fold_trunc", "vision_model_fold", m[:len(m) - 4], expect="fold_trunc.bin: .*truncated")
    # the config slots each family reads (ViT ignores 12-13, Swin 10)
    for slot in (range(4, 12) if fam == "vit" else (4, 5, 6, 7, 8, 9, 11, 12)):
        slot_values(f, consumer, m, slot, f"slot{slot}", [0, -1, I32_MIN, I32_MAX, 4097])
    if fam == "swin":
        slot_values(f, consumer, m, 13, "centre_ops", [-1, 2, I32_MAX])
        slot_values(f, consumer, m, 15, "paper_variant", [-1, 2, I32_MAX])
        # the paper variant is a cbwc model without centring ops
        case(f, "paper_variant_ln", consumer, set_i32(set_i32(m, 15, 1), 3, 0),
             expect="paper variant is a cbwc model")
        case(f, "paper_variant_centre_ops", consumer, set_i32(set_i32(set_i32(m, 15, 1), 13, 1), 3, 2),
             expect="paper variant has no centring ops")
    case(f, "nan_first", consumer, set_f32(m, 0, float("nan")), expect="nan_first.bin.*patchw.*not finite")
    case(f, "inf_last", consumer, set_f32(m, nv - 1, float("inf")), expect="inf_last.bin.*headb.*not finite")
    case(f, "crc_good", consumer, with_crc(m), expect="ok")
    case(f, "crc_flipped_param", consumer, flip_byte(with_crc(m), 1024 + 4 * (nv // 2) + 3),
         expect="crc_flipped_param.bin: checksum mismatch", stale_crc=True)
    if fam == "swin":
        for s in range(2):
            slot_values(f, consumer, m, 16 + s, f"depth{s}", [0, -1, 257, I32_MAX])
            slot_values(f, consumer, m, 24 + s, f"heads{s}", [0, -1, 3, I32_MAX])
        slot_values(f, consumer, m, 9, "stages", [9, 3])
        # a small file asking for huge window tables: 4096 px, patch 1, window 64
        b = set_i32(set_i32(set_i32(set_i32(m, 4, 4096), 6, 1), 12, 64), 8, 2)
        case(f, "huge_windows", consumer, b, expect="window tables|multiple|out of range")
        b = set_i32(set_i32(set_i32(m, 4, 2048), 6, 1), 12, 64)
        case(f, "huge_windows_2048", consumer, b, expect="window tables")
        # with 2 blocks a stage the second is shifted: its mask alone is 256 GB
        b = set_i32(set_i32(set_i32(set_i32(set_i32(m, 4, 4096), 6, 1), 12, 64), 8, 2), 16, 2)
        case(f, "huge_windows_shifted", consumer, b, expect="window tables")
    else:
        # ViT with 4096x4096 patch-1 images: 2^24 tokens, attention scores beyond any memory
        b = set_i32(set_i32(m, 4, 4096), 6, 1)
        case(f, "huge_tokens", consumer, b, expect="attention scores")
    st = read(f"{fam}_state.bin")
    sc = f"vision_state_{fam}"
    f = f"vision_state_{fam}"
    cases.append((f"vision_state/{fam}_good", sc, os.path.join(GOOD, f"{fam}_state.bin"), "ok"))
    truncations(f, sc, st, 12, (1024 + 4, len(st) // 2))
    case(f, "trailing", sc, st + bytes(4))
    slot_values(f, sc, st, 0, "magic", [20240327, 0])
    slot_values(f, sc, st, 1, "version", [0, 2])
    slot_values(f, sc, st, 2, "B", [0, -1, (1 << 16) + 1, I32_MAX, I32_MIN])
    slot_values(f, sc, st, 3, "steps", [-1, (1 << 20) + 1, I32_MAX])
    slot_values(f, sc, st, 11, "family", [1 - (fam == "swin"), 2])
    mm = read(f"{fam}.bin")
    S, Cin, K = struct.unpack_from("<3i", mm, 16)[0], struct.unpack_from("<i", mm, 20)[0], struct.unpack_from("<i", mm, 28)[0]
    B = struct.unpack_from("<i", st, 8)[0]
    case(f, "label_K", sc, set_i32(st, B * Cin * S * S, K, offset=1024), expect="label")
    case(f, "label_negative", sc, set_i32(st, B * Cin * S * S, -1, offset=1024), expect="label")

# ---------------------------------------------------------------- graph text
graph = read("graph.txt")
cases.append(("graph/good", "graph", os.path.join(GOOD, "graph.txt"), "ok"))
cut = graph.index(b" dim=", graph.index(b"\ninput ")) + 3
for n in (0, cut):  # empty; cut inside the first input's "dim=": a stray input name
    case("graph", f"trunc_{n}", "graph", graph[:n], ".txt")
for name, text in (
        ("unknown_op", b"input x dim=4\nfrobnicate y x\n"),
        ("cycle", b"input x dim=4\nadd a x b\nadd b x a\n"),
        ("dangling_input", b"input x dim=4\nlayernorm n y\n"),
        ("duplicate_node", b"input x dim=4\ninput x dim=4\n"),
        ("dim_zero", b"input x dim=0\n"),
        ("dim_huge", b"input x dim=16777217\n"),
        ("dim_overflow", b"input x dim=99999999999999999999\n"),
        ("bad_heads", b"input x dim=12\nattention a x heads=5\n"),
        ("width_mismatch", b"input x dim=4\ninput y dim=5\nadd a x y\n"),
        ("bad_name", b"input x! dim=4\n"),
        ("too_many_words", b"input x dim=4\nadd a" + b" x" * 40 + b"\n"),
        ("too_many_inputs", b"input x dim=4\nadd a" + b" x" * 9 + b"\n"),
        ("nul_byte", b"input x dim=4\n\0layernorm n x\n"),
        ("binary", bytes(range(1, 256)) * 8),
        ("only_comments", b"# nothing here\n\n"),
        ("value_nan_temperature", b"input x dim=4\ntemperature t x value=-1\n")):
    case("graph", name, "graph", text, ".txt")
case("graph", "too_many_nodes", "graph",
     b"".join(b"input n%d dim=1\n" % i for i in range(40000)), ".txt", expect="more than 32768 nodes")

# ---------------------------------------------------------------- ONNX (foldcheck)
# bin/onnx_export's file: ModelProto fields in number order, the graph (field 7)
# one length-delimited field over most of the file, so a cut anywhere after
# its tag leaves a length that overruns the data
model = read("model.onnx")
cases.append(("onnx/good", "onnx", os.path.join(GOOD, "model.onnx"), "ok"))
def varint(data, at):
    value, shift = 0, 0
    while True:
        value |= (data[at] & 0x7f) << shift
        shift += 7
        at += 1
        if data[at - 1] < 0x80:
            return value, at


graph_at = 0
while model[graph_at] != 0x3a:  # walk the fields before the graph (field 7, wire type 2)
    key, graph_at = varint(model, graph_at)
    value, graph_at = varint(model, graph_at)
    graph_at += value if key & 7 == 2 else 0
for name, n in (("graph_tag", graph_at + 1), ("quarter", len(model) // 4), ("half", len(model) // 2),
                ("last_byte", len(model) - 1)):
    case("onnx", f"trunc_{name}", "onnx", model[:n], ".onnx", expect="onnx/trunc_.*not an ONNX model")
case("onnx", "empty", "onnx", b"", ".onnx", expect="onnx/empty.onnx: the model has no graph")
case("onnx", "binary", "onnx", bytes(range(256)) * 8, ".onnx", expect="onnx/binary.onnx: not an ONNX model")
case("onnx", "graph_text", "onnx", read("graph.txt"), ".onnx", expect="onnx/graph_text.onnx: not an ONNX model")
# a huge length prefix for the graph field
case("onnx", "graph_length", "onnx", b"\x08\x08\x3a\xff\xff\xff\xff\x0f" + model[graph_at:graph_at + 64],
     ".onnx", expect="onnx/graph_length.onnx: not an ONNX model")

# ---------------------------------------------------------------- images_to_shard (JPEG folders)
jpeg = read("apple.jpg")


def jpeg_case(name, files, expect=None, classes=None):
    d = path_of("images_to_shard", name)
    for cls, fname, data in files:
        os.makedirs(os.path.join(d, cls), exist_ok=True)
        with open(os.path.join(d, cls, fname), "wb") as f:
            f.write(data)
    if classes is not None:
        with open(d + ".classes", "wb") as f:
            f.write(classes)
    cases.append((f"images_to_shard/{name}", "images_to_shard" + ("_classes" if classes is not None else ""),
                  d, expect or name))


jpeg_case("empty_jpeg", [("a", "x.jpg", jpeg), ("b", "empty.jpg", b"")], "class 'b' has no readable JPEG")
jpeg_case("jpeg_magic_garbage", [("a", "x.jpg", jpeg), ("b", "g.jpg", b"\xff\xd8\xff" + bytes(range(256)) * 4)],
          "no readable JPEG")
jpeg_case("header_only_jpeg", [("a", "x.jpg", jpeg), ("b", "h.jpg", jpeg[:200])], "no readable JPEG")
jpeg_case("text_as_jpeg", [("a", "x.jpg", jpeg), ("b", "t.jpg", b"not a jpeg\n")], "no readable JPEG")
jpeg_case("class_list_missing_folder", [("a", "x.jpg", jpeg)], "no_such_class", classes=b"a\nno_such_class\n")
jpeg_case("class_list_duplicate", [("a", "x.jpg", jpeg)], "twice|duplicate|a", classes=b"a\na\n")
jpeg_case("class_list_empty", [("a", "x.jpg", jpeg)], "class", classes=b"")

with open(os.path.join(OUT, "manifest.tsv"), "w") as f:
    for name, consumer, p, expect in cases:
        f.write(f"{name}\t{consumer}\t{p}\t{expect}\n")
print(f"make_bad_files: {len(cases)} cases in {OUT}/manifest.tsv")
