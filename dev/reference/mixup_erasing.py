"""PyTorch references of the batch-level augmentations and the mixed-target
loss (test/suites/mixup_erasing.sh), written from timm's semantics:
  - RandomErasing(probability=p, mode='pixel', max_count=1): random() > p
    keeps the image; up to 10 attempts of area uniform(0.02, 1/3) * H * W and
    aspect exp(uniform(log 0.3, log 1/0.3)), h = int(round(sqrt(area *
    aspect))), w = int(round(sqrt(area / aspect))), the first with h < H and
    w < W placed at randint(0, H - h), randint(0, W - w) and filled with
    normal_() values of shape (C, h, w);
  - Mixup(mode='batch', correct_lam=True): with both alphas, cutmix with
    probability 0.5; cutmix's rand_bbox around (randint(0, H), randint(0, W)),
    lam corrected to 1 - box area / image area, x[:, :, box] =
    x.flip(0)[:, :, box]; mixup x.mul_(lam).add_(x.flip(0).mul_(1 - lam));
    targets mixup_target: one_hot(y, on=1-s+s/K, off=s/K) * lam +
    one_hot(y.flip(0)) * (1 - lam);
  - the loss: F.cross_entropy with those soft targets.
The random numbers are ours: this file replays the test program's Rng
(llmc/core/rand.c: splitmix64 seeding, xorshift64*, Box-Muller) so that
each op is drawn here from the same values; the Beta draw of mixup's lam
(its own stream of a varying length) is read from the dump and checked
separately against torch.distributions.Beta (two-sample Kolmogorov-Smirnov)."""

import math

import numpy as np
import torch
import torch.nn.functional as F

M64 = (1 << 64) - 1


class OurRng:
    """llmc/core/rand.c, value for value."""

    def __init__(self, seed):
        z = (seed + 0x9E3779B97F4A7C15) & M64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        z ^= z >> 31
        self.state = z if z != 0 else 0x2545F4914F6CDD1D

    def u32(self):
        x = self.state
        x ^= x >> 12
        x ^= (x << 25) & M64
        x ^= x >> 27
        self.state = x
        return ((x * 0x2545F4914F6CDD1D) & M64) >> 32

    def random(self):  # rng_uniform: 24 bits, exact in a double
        return (self.u32() >> 8) / 16777216.0

    def randint(self, lo, hi):  # inclusive, as random.randint; our draw is u32 % range
        return lo + self.u32() % (hi - lo + 1)

    def u64(self):
        hi = self.u32()
        return (hi << 32) | self.u32()

    def normal(self, n):  # rng_normal_fill: Box-Muller pairs, fp64, rounded to fp32
        out = np.empty(n, dtype=np.float32)
        for i in range(0, n, 2):
            u1 = 1.0 - self.random()
            u2 = self.random()
            r = math.sqrt(-2.0 * math.log(u1))
            out[i] = r * math.cos(2.0 * math.pi * u2)
            if i + 1 < n:
                out[i + 1] = r * math.sin(2.0 * math.pi * u2)
        return out


def random_erasing(img, p, rng):
    """timm RandomErasing._erase, mode 'pixel', one box, on img (C, H, W) in place."""
    C, H, W = img.shape
    if rng.random() > p:
        return False
    area = H * W
    log_ratio = (math.log(0.3), math.log(1 / 0.3))
    for _ in range(10):
        target_area = (0.02 + (1 / 3 - 0.02) * rng.random()) * area  # random.uniform
        aspect = math.exp(log_ratio[0] + (log_ratio[1] - log_ratio[0]) * rng.random())
        h = int(round(math.sqrt(target_area * aspect)))
        w = int(round(math.sqrt(target_area / aspect)))
        if w < W and h < H:
            top = rng.randint(0, H - h)
            left = rng.randint(0, W - w)
            fill = OurRng(rng.u64()).normal(C * h * w)
            img[:, top:top + h, left:left + w] = torch.from_numpy(fill).view(C, h, w)
            return True
    return False


def mix_batch(x, target, mixup_alpha, cutmix_alpha, beta_lam, rng, partner=None):
    """timm Mixup._mix_batch (mode 'batch', correct_lam) on x (B, C, H, W) in
    place; returns lam and whether cutmix. partner: the mixing order (the
    flip, or another for the negative control)."""
    B, C, H, W = x.shape
    flip = partner if partner is not None else torch.arange(B - 1, -1, -1)
    if mixup_alpha > 0 and cutmix_alpha > 0:
        use_cutmix = rng.random() < 0.5
    else:
        use_cutmix = cutmix_alpha > 0
    cy, cx = rng.randint(0, H - 1), rng.randint(0, W - 1)
    rng.u64()  # the seed of the Beta draw's stream; its value comes from the dump
    lam = beta_lam
    if use_cutmix:
        ratio = np.sqrt(1 - lam)
        cut_h, cut_w = int(H * ratio), int(W * ratio)
        yl, yh = np.clip(cy - cut_h // 2, 0, H), np.clip(cy + cut_h // 2, 0, H)
        xl, xh = np.clip(cx - cut_w // 2, 0, W), np.clip(cx + cut_w // 2, 0, W)
        lam = 1.0 - (yh - yl) * (xh - xl) / float(H * W)
        x[:, :, yl:yh, xl:xh] = x[flip][:, :, yl:yh, xl:xh]
    else:
        x_flipped = x[flip].mul_(1.0 - lam)
        x.mul_(lam).add_(x_flipped)
    return lam, use_cutmix, flip


def mixup_target(target, K, lam, smoothing, flip):
    off = smoothing / K
    on = 1.0 - smoothing + off
    y1 = torch.full((len(target), K), off, dtype=torch.float64).scatter_(1, target.view(-1, 1), on)
    y2 = torch.full((len(target), K), off, dtype=torch.float64).scatter_(
        1, target[flip].view(-1, 1), on)
    return y1 * lam + y2 * (1.0 - lam)


def soft_targets(labels, labels2, lam, K, smoothing):
    """Our (labels, labels2, lam) as the distribution classifier_loss.h states."""
    one = F.one_hot(labels, K).double()
    two = F.one_hot(labels2, K).double()
    lam = lam.double().view(-1, 1)
    return smoothing / K + (1 - smoothing) * (lam * one + (1 - lam) * two)
