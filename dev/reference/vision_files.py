"""File I/O shared by the ViT and Swin references (dev/reference/vit.py,
swin.py): the vision model file (magic 20261129) and the vision debug state
(magic 20261130), both described in docs/formats.md."""

import math
import sys

import numpy as np

MODEL_MAGIC = 20261129
MODEL_VERSION = 1
STATE_MAGIC = 20261130
STATE_VERSION = 1
HEADER_INTS = 256
MODES = ("ln", "rms", "cbwc", "prms")
# a folded model (bin/fold, mode 3) is read, never written: its file holds the
# centred stream writers, and its foldable norms (as cbwc's) run as RMSNorm
READ_MODES = MODES + ("folded",)
# header slot 3's values (llmc/core/norm_mode.c); prms adds its share p in
# units of 2^-16 above the low byte: the RMS of the first ceil(p C) features
FILE_VALUE = {"ln": 0, "rms": 1, "cbwc": 2, "folded": 3, "prms": 4}
SHARE_UNITS = 65536
# the references' prms share: k = ceil(p C) >= 2 at their widths (C 8 to 32):
# with k = 1 (-nf's default 0.0625 at C < 17) the RMS of one feature, 1/|x_0|,
# is too ill-conditioned for a 1e-5 comparison (Swin's config B: 3e-3 apart in
# fp32 while p = 0.5 agrees to 1.4e-7)
PRMS_SHARE = 0.25
FAMILIES = ("vit", "swin")

# header slots (llmc/vision/vision_model.h)
SLOT = dict(magic=0, version=1, family=2, mode=3, image_size=4, image_channels=5,
            patch_size=6, num_classes=7, channels=8, num_layers=9, num_heads=10,
            mlp_ratio=11, window=12, centre_ops=13, folded_norms=14, paper_variant=15,
            depths=16, heads=24)


def f32_bits(v):
    return int(np.array([v], dtype=np.float32).view(np.int32)[0])


def write_model(path, family, mode, fields, params):
    """fields: {slot name: int or list}; params: list of arrays in file order."""
    if mode not in MODES:
        sys.exit(f"{path}: the references write ln, rms or cbwc models, not {mode}")
    h = np.zeros(HEADER_INTS, dtype=np.int32)
    h[SLOT["magic"]] = MODEL_MAGIC
    h[SLOT["version"]] = MODEL_VERSION
    h[SLOT["family"]] = FAMILIES.index(family)
    h[SLOT["mode"]] = FILE_VALUE[mode] + (256 * round(PRMS_SHARE * SHARE_UNITS) if mode == "prms" else 0)
    for k, v in fields.items():
        if isinstance(v, (list, tuple)):
            h[SLOT[k]:SLOT[k] + len(v)] = v
        else:
            h[SLOT[k]] = v
    with open(path, "wb") as f:
        f.write(h.astype("<i4").tobytes())
        for p in params:
            f.write(np.asarray(p, dtype="<f4").tobytes())


def read_model(path, family):
    """Returns (header int array, mode name, flat float32 parameters)."""
    def fail(msg):
        sys.exit(f"{path}: {msg}")
    try:
        data = open(path, "rb").read()
    except OSError as e:
        fail(f"cannot open: {e.strerror}")
    if len(data) < 4 * HEADER_INTS:
        fail("file shorter than the 1024-byte header")
    h = np.frombuffer(data[:4 * HEADER_INTS], dtype="<i4")
    if h[0] != MODEL_MAGIC or h[1] != MODEL_VERSION:
        fail(f"not a vision model file (magic {h[0]}, version {h[1]})")
    if h[2] != FAMILIES.index(family):
        fail(f"family {h[2]} is not {family}")
    value = int(h[3])
    if value & 255 == FILE_VALUE["prms"] and value >> 8 == round(PRMS_SHARE * SHARE_UNITS):
        value = FILE_VALUE["prms"]
    names = {v: k for k, v in FILE_VALUE.items()}
    if value not in names:
        fail(f"norm mode {h[3]} not one of {sorted(names)} (prms: share {PRMS_SHARE} only)")
    flat = np.frombuffer(data, dtype="<f4", offset=4 * HEADER_INTS).astype(np.float32)
    return h, names[value], flat


# the largest rms(all C features) / rms(the first k) any prms_norm call has seen:
# the factor by which the partial RMS's backward amplifies rounding (the
# derivative of x / rms_k carries x x_k / rms_k^3), read by the tests
PRMS_CONDITIONING = [1.0]


def prms_norm(x, g, b, eps):
    """Partial RMSNorm: the RMS of the first ceil(PRMS_SHARE C) features scales all C."""
    C = x.shape[-1]
    k = max(1, min(C, math.ceil(PRMS_SHARE * C)))
    xd = x.detach()
    ratio = ((xd * xd).mean(-1).add(eps) / (xd[..., :k] * xd[..., :k]).mean(-1).add(eps)).sqrt().max().item()
    PRMS_CONDITIONING[0] = max(PRMS_CONDITIONING[0], ratio)
    return x * (x[..., :k] * x[..., :k]).mean(-1, keepdim=True).add(eps).rsqrt() * g + b


def write_state(path, family, images, labels, logits, loss, grads, losses, hp):
    h = np.zeros(HEADER_INTS, dtype=np.int32)
    vals = [STATE_MAGIC, STATE_VERSION, images.shape[0], len(losses),
            f32_bits(hp["lr"]), f32_bits(hp["beta1"]), f32_bits(hp["beta2"]),
            f32_bits(hp["eps"]), f32_bits(hp["wd"]), f32_bits(hp["clip"]),
            f32_bits(hp["smoothing"]), FAMILIES.index(family)]
    h[:len(vals)] = vals
    with open(path, "wb") as f:
        f.write(h.tobytes())
        f.write(np.asarray(images, dtype="<f4").tobytes())
        f.write(np.asarray(labels, dtype="<i4").tobytes())
        f.write(np.asarray(logits, dtype="<f4").tobytes())
        f.write(np.array([loss], dtype="<f4").tobytes())
        for g in grads:
            f.write(np.asarray(g, dtype="<f4").tobytes())
        f.write(np.array(losses, dtype="<f4").tobytes())
