"""RandAugment's reference for test/suites/randaugment.sh: the draws that
test_randaugment dumps (op, magnitude, sign) re-applied here, independently.

The level functions are timm's (timm/data/auto_augment.py: magnitude of 10 to
degrees, bits, threshold, added level, enhance factor, shear, translate
fraction), written here from the op's name. The pixel ops are the PIL calls
timm makes (ImageOps.autocontrast, equalize, invert, posterize, solarize,
Image.point for SolarizeAdd, ImageEnhance.Color / Contrast / Brightness /
Sharpness): their bytes must equal ours exactly. The geometric ops are
numpy here, in PIL's affine convention (the inverse map at pixel centres,
rotation counter-clockwise about (w/2, h/2), NEAREST: the floor of the source
coordinate, the fill colour outside): exact too. PIL's own Image.rotate /
Image.transform with NEAREST are a cross-check of that convention: PIL takes
the angle mod 360 and steps its coordinates incrementally, so a pixel whose
source coordinate lies on a pixel edge to rounding may fall the other way
(measured: at most 2.2e-4 of the pixels over 31 seeds; allowed 2e-3), while
the opposite direction differs in most (~0.85).

  randaugment.py ops FILE          the ops records
  randaugment.py pipeline FILE     the pipeline records (floats within 1e-6)
  randaugment.py draws M MSTD P    stdin: draws lines; their statistics
"""

import math
import struct
import sys

import numpy as np
from PIL import Image, ImageEnhance, ImageOps

NAMES = ["AutoContrast", "Equalize", "Invert", "Rotate", "Posterize", "PosterizeIncreasing",
         "Solarize", "SolarizeIncreasing", "SolarizeAdd", "Color", "ColorIncreasing", "Contrast",
         "ContrastIncreasing", "Brightness", "BrightnessIncreasing", "Sharpness",
         "SharpnessIncreasing", "ShearX", "ShearY", "TranslateXRel", "TranslateYRel"]
GEOMETRIC = {"Rotate", "ShearX", "ShearY", "TranslateXRel", "TranslateYRel"}
INCREASING_SET = ["AutoContrast", "Equalize", "Invert", "Rotate", "PosterizeIncreasing",
                  "SolarizeIncreasing", "SolarizeAdd", "ColorIncreasing", "ContrastIncreasing",
                  "BrightnessIncreasing", "SharpnessIncreasing", "ShearX", "ShearY",
                  "TranslateXRel", "TranslateYRel"]


def level_arg(name, magnitude, negate):
    """timm's *_level_to_arg for name at magnitude (of 10), negated when drawn so."""
    level = magnitude / 10.0

    def signed(v):
        return -v if negate else v

    if name == "Rotate":
        return signed(level * 30.0)
    if name == "Posterize":
        return int(level * 4)
    if name == "PosterizeIncreasing":
        return 4 - int(level * 4)
    if name == "Solarize":
        return min(256, int(level * 256))
    if name == "SolarizeIncreasing":
        return 256 - min(256, int(level * 256))
    if name == "SolarizeAdd":
        return min(128, int(level * 110))
    if name in ("Color", "Contrast", "Brightness", "Sharpness"):
        return level * 1.8 + 0.1
    if name.endswith("Increasing"):  # the enhance ops: 1 +- 0.9 level, at least 0.1
        return max(0.1, 1.0 + signed(level * 0.9))
    if name in ("ShearX", "ShearY"):
        return signed(level * 0.3)
    if name in ("TranslateXRel", "TranslateYRel"):
        return signed(level * 0.45)
    return None


def pil_op(img, name, arg):
    """The PIL call timm makes for a pixel op."""
    if name == "AutoContrast":
        return ImageOps.autocontrast(img)
    if name == "Equalize":
        return ImageOps.equalize(img)
    if name == "Invert":
        return ImageOps.invert(img)
    if name.startswith("Posterize"):
        return img if arg >= 8 else ImageOps.posterize(img, arg)
    if name.startswith("SolarizeAdd"):
        lut = [min(255, i + arg) if i < 128 else i for i in range(256)]
        return img.point(lut * (3 if img.mode == "RGB" else 1))
    if name.startswith("Solarize"):
        return ImageOps.solarize(img, arg)
    enhancer = {"Color": ImageEnhance.Color, "Contrast": ImageEnhance.Contrast,
                "Brightness": ImageEnhance.Brightness,
                "Sharpness": ImageEnhance.Sharpness}[name.replace("Increasing", "")]
    return enhancer(img).enhance(arg)


def affine_matrix(name, arg, side):
    """The inverse map (a, b, c, d, e, f) PIL applies: source = (a x + b y + c, d x + e y + f)."""
    if name == "Rotate":  # Image.rotate: counter-clockwise about the centre
        t = -math.radians(arg)
        cx = cy = side / 2.0
        a, b, d, e = math.cos(t), math.sin(t), -math.sin(t), math.cos(t)
        return (a, b, a * -cx + b * -cy + cx, d, e, d * -cx + e * -cy + cy)
    if name == "ShearX":
        return (1.0, arg, 0.0, 0.0, 1.0, 0.0)
    if name == "ShearY":
        return (1.0, 0.0, 0.0, arg, 1.0, 0.0)
    if name == "TranslateXRel":
        return (1.0, 0.0, arg * side, 0.0, 1.0, 0.0)
    return (1.0, 0.0, 0.0, 0.0, 1.0, arg * side)


def numpy_affine_nearest(img, m, fill):
    """img (H, W, C) through the inverse map m at pixel centres, NEAREST, fill outside."""
    side = img.shape[0]
    y, x = np.meshgrid(np.arange(side, dtype=np.float64) + 0.5,
                       np.arange(side, dtype=np.float64) + 0.5, indexing="ij")
    xs = m[0] * x + m[1] * y + m[2]
    ys = m[3] * x + m[4] * y + m[5]
    inside = (xs >= 0) & (xs < side) & (ys >= 0) & (ys < side)
    xi = np.where(inside, xs, 0).astype(np.int64)
    yi = np.where(inside, ys, 0).astype(np.int64)
    out = img[yi, xi].copy()
    out[~inside] = fill
    return out


def pil_geometric(img, name, arg, fill):
    """PIL's own call, as timm makes it, with NEAREST: the convention's cross-check."""
    side = img.size[0]
    fillcolor = fill if img.mode == "RGB" else fill[0]
    if name == "Rotate":
        return img.rotate(arg, resample=Image.NEAREST, fillcolor=fillcolor)
    m = affine_matrix(name, arg, side)
    return img.transform(img.size, Image.AFFINE, m, resample=Image.NEAREST, fillcolor=fillcolor)


def to_pil(a):
    return Image.fromarray(a[:, :, 0] if a.shape[2] == 1 else a, "L" if a.shape[2] == 1 else "RGB")


def from_pil(img, C):
    return np.asarray(img, dtype=np.uint8).reshape(img.size[1], img.size[0], C)


FILL = {1: (73,), 3: (124, 116, 104)}


def reference(img, name, magnitude, negate):
    """Our op's expected bytes: PIL for the pixel ops, numpy for the geometric ones."""
    arg = level_arg(name, magnitude, negate)
    C = img.shape[2]
    if name in GEOMETRIC:
        return numpy_affine_nearest(img, affine_matrix(name, arg, img.shape[0]), FILL[C])
    return from_pil(pil_op(to_pil(img), name, arg), C)


def check_ops(path):
    data = open(path, "rb").read()
    pos, failures, records, changed = 0, 0, 0, 0
    per_op = {}
    pil_diff, pil_pixels, wrong_way = 0, 0, []
    while pos < len(data):
        op, negate, C, side = struct.unpack_from("<4i", data, pos)
        (magnitude,) = struct.unpack_from("<f", data, pos + 16)
        pos += 20
        n = side * side * C
        img = np.frombuffer(data, np.uint8, n, pos).reshape(side, side, C)
        ours = np.frombuffer(data, np.uint8, n, pos + n).reshape(side, side, C)
        pos += 2 * n
        name = NAMES[op]
        want = reference(img, name, float(magnitude), negate)
        records += 1
        changed += int(not np.array_equal(img, ours))
        ok = np.array_equal(want, ours)
        per_op.setdefault(name, [0, 0])[0 if ok else 1] += 1
        if not ok:
            failures += 1
            bad = int(np.sum(want != ours))
            print(f"FAIL {name} m={magnitude:.6g} negate={negate} C={C} side={side}: "
                  f"{bad} of {n} bytes differ, worst {int(np.max(np.abs(want.astype(int) - ours)))} levels")
        if name in GEOMETRIC and magnitude > 0:
            arg = level_arg(name, float(magnitude), negate)
            pil = from_pil(pil_geometric(to_pil(img), name, arg, FILL[C]), C)
            pil_diff += int(np.sum(np.any(pil != ours, axis=2)))
            pil_pixels += side * side
            # the control: the other direction, against PIL's
            back = numpy_affine_nearest(img, affine_matrix(name, -arg, side), FILL[C])
            wrong_way.append(float(np.mean(np.any(pil != back, axis=2))))
    for name in NAMES:
        good, bad = per_op.get(name, [0, 0])
        print(f"  {name:22s} {good:3d} records equal{'' if bad == 0 else f', {bad} FAIL'}")
    print(f"  {changed} of {records} records changed their image")
    # exact: 0 bytes differ (the ops are integer, PIL's float steps done in float as PIL does)
    if records == 0 or changed < records // 2:
        sys.exit("FAIL: too few records, or the ops left most images unchanged")
    frac = pil_diff / max(pil_pixels, 1)
    control = float(np.median(wrong_way)) if wrong_way else 0.0
    print(f"  geometric ops vs PIL's own NEAREST: {frac:.2e} of pixels differ (allowed 2e-3, "
          f"edges to rounding); the opposite direction: median {control:.2f} differ")
    if not (frac <= 2e-3 and control > 0.1):
        sys.exit("FAIL: the geometric convention differs from PIL's")
    if failures:
        sys.exit(f"FAIL: {failures} of {records} records differ from the reference")
    print(f"ok   ops: {records} records equal the reference byte for byte")


def check_pipeline(path):
    data = open(path, "rb").read()
    pos, worst, images, applied, control = 0, 0.0, 0, 0, 0.0
    while pos < len(data):
        is_shard, S, C, flip, layers = struct.unpack_from("<5i", data, pos)
        pos += 20
        draws = []
        for _ in range(layers):
            op, on, negate = struct.unpack_from("<3i", data, pos)
            (magnitude,) = struct.unpack_from("<f", data, pos + 12)
            pos += 16
            draws.append((NAMES[op], on, negate, float(magnitude)))
        n = S * S * C
        img = np.frombuffer(data, np.uint8, n, pos).reshape(S, S, C).copy()
        ours = np.frombuffer(data, np.float32, n, pos + n).reshape(S, S, C) if C == 1 else \
            np.frombuffer(data, np.float32, n, pos + n).reshape(C, S, S).transpose(1, 2, 0)
        pos += n + 4 * n
        if not is_shard and flip:  # the grey source, flipped here (the shard's bytes are the crop's)
            img = img[:, ::-1].copy()
        plain = img.copy()
        for name, on, negate, magnitude in draws:
            if on:
                img = reference(img, name, magnitude, negate)
                applied += 1
        if is_shard:
            mean = np.array([0.485, 0.456, 0.406], np.float32)
            std = np.array([0.229, 0.224, 0.225], np.float32)
        else:
            mean, std = np.float32(0.2860), np.float32(0.3530)

        def normalise(a):
            return (a.astype(np.float32) / np.float32(255) - mean) / std

        worst = max(worst, float(np.max(np.abs(normalise(img) - ours))))
        control = max(control, float(np.max(np.abs(normalise(plain) - ours))))
        images += 1
    print(f"  {images} images, {applied} ops applied: worst |ours - reference| {worst:.2e} "
          f"(allowed 1e-6); without the ops {control:.2f}")
    if not (worst <= 1e-6 and control > 1e-2 and applied > 0):
        sys.exit("FAIL: the pipeline's images differ from the reference's")
    print("ok   pipeline: every image equals the reference within 1e-6")


def check_draws(m, mstd, p):
    rows = [line.split() for line in sys.stdin if line.strip()]
    N = len(rows)
    counts = {name: 0 for name in INCREASING_SET}
    for r in rows:
        counts[r[2]] += 1
    applied = sum(int(r[3]) for r in rows) / N
    neg = sum(int(r[5]) for r in rows) / N
    mags = np.array([float(r[4]) for r in rows])
    # the clipped normal's mean and std, from the unclipped one by sampling here
    ref = np.clip(np.random.default_rng(0).normal(m, mstd, 1_000_000), 0, 10)
    expect = N / len(INCREASING_SET)
    z_ops = max(abs(c - expect) / math.sqrt(expect * (1 - 1 / 15)) for c in counts.values())
    z_p = abs(applied - p) / math.sqrt(p * (1 - p) / N)
    z_neg = abs(neg - 0.5) / math.sqrt(0.25 / N)
    z_mean = abs(mags.mean() - ref.mean()) / (ref.std() / math.sqrt(N))
    rel_std = abs(mags.std() / ref.std() - 1)
    print(f"  {N} layers: ops worst {z_ops:.2f} sigma, applied {applied:.4f} ({z_p:.2f} sigma), "
          f"negated {neg:.4f} ({z_neg:.2f} sigma), magnitude mean {mags.mean():.4f} vs "
          f"{ref.mean():.4f} ({z_mean:.2f} sigma), std {mags.std():.4f} vs {ref.std():.4f}")
    if set(counts) != set(r[2] for r in rows) or not (z_ops <= 6 and z_p <= 6 and z_neg <= 6 and
                                                      z_mean <= 6 and rel_std <= 0.05):
        sys.exit("FAIL: the draws' statistics (6 sigma; the std within 5%)")
    print("ok   draws: the inc1 set uniform, p, signs and the magnitude's distribution")


if __name__ == "__main__":
    if sys.argv[1] == "ops":
        check_ops(sys.argv[2])
    elif sys.argv[1] == "pipeline":
        check_pipeline(sys.argv[2])
    else:
        check_draws(float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]))
