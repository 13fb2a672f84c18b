#include "mixup.h"

#include <math.h>
#include <stddef.h>

// Gamma(a, 1): Marsaglia and Tsang's squeeze-free method; a < 1 through
// Gamma(a) = Gamma(a + 1) U^(1/a).
static double gamma_draw(double a, Rng *rng) {
    if (a < 1.0) {
        const double u = 1.0 - rng_uniform(rng); // (0, 1]
        return gamma_draw(a + 1.0, rng) * pow(u, 1.0 / a);
    }
    const double d = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        float z;
        rng_normal_fill(rng, &z, 1, 0.0f, 1.0f);
        double v = 1.0 + c * z;
        if (v <= 0.0)
            continue;
        v = v * v * v;
        const double u = 1.0 - rng_uniform(rng);
        if (log(u) < 0.5 * z * z + d - d * v + d * log(v))
            return d * v;
    }
}

double mixup_beta_draw(double alpha, Rng *rng) {
    const double x = gamma_draw(alpha, rng), y = gamma_draw(alpha, rng);
    // both underflow only for a tiny alpha, whose Beta sits at 0 and 1
    if (x + y == 0.0)
        return rng_uniform(rng) < 0.5f ? 0.0 : 1.0;
    return x / (x + y);
}

MixupDraw mixup_draw(const MixupConfig *c, int H, int W, Rng *rng) {
    MixupDraw d = {0, 0, 1.0, 0, 0};
    const int mixup = c->mixup_alpha > 0.0f, cutmix = c->cutmix_alpha > 0.0f;
    if (!mixup && !cutmix)
        return d;
    d.active = 1;
    d.use_cutmix = mixup && cutmix ? rng_uniform(rng) < MIXUP_SWITCH_PROB : cutmix;
    d.cy = (int)(rng_u32(rng) % (uint32_t)H); // np.random.randint(0, H)
    d.cx = (int)(rng_u32(rng) % (uint32_t)W);
    const uint64_t hi = rng_u32(rng);
    Rng beta; // its own stream: the Beta draw takes a varying number of values
    rng_seed(&beta, hi << 32 | rng_u32(rng));
    d.lam = mixup_beta_draw(d.use_cutmix ? c->cutmix_alpha : c->mixup_alpha, &beta);
    return d;
}

static int clamp_int(int v, int lo, int hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

float mixup_apply(float *images, const int *labels, int *labels2, float *lam, int B, int C, int H,
                  int W, const MixupDraw *d) {
    double l = d->lam;
    const size_t plane = (size_t)H * W, image = (size_t)C * plane;
    if (d->use_cutmix) {
        // timm's rand_bbox: a box of sqrt(1 - lam) of each side around (cy, cx), clipped
        const double ratio = sqrt(1.0 - l);
        const int cut_h = (int)(H * ratio), cut_w = (int)(W * ratio);
        const int y0 = clamp_int(d->cy - cut_h / 2, 0, H), y1 = clamp_int(d->cy + cut_h / 2, 0, H);
        const int x0 = clamp_int(d->cx - cut_w / 2, 0, W), x1 = clamp_int(d->cx + cut_w / 2, 0, W);
        l = 1.0 - (double)(y1 - y0) * (x1 - x0) / (double)plane;
        for (int b = 0; b < B - 1 - b; b++) { // b and its mirror trade their boxes
            float *p = images + b * image, *q = images + (size_t)(B - 1 - b) * image;
            for (int c = 0; c < C; c++) {
                for (int y = y0; y < y1; y++) {
                    for (int x = x0; x < x1; x++) {
                        const size_t i = c * plane + (size_t)y * W + x;
                        const float t = p[i];
                        p[i] = q[i];
                        q[i] = t;
                    }
                }
            }
        }
    } else {
        // torch: x.mul_(lam).add_(x.flip(0).mul_(1 - lam)), both products rounded to fp32
        const float a = (float)l, m = (float)(1.0 - l);
        for (int b = 0; b <= B - 1 - b; b++) {
            float *p = images + b * image, *q = images + (size_t)(B - 1 - b) * image;
            for (size_t i = 0; i < image; i++) {
                const float pa = p[i] * a, pm = p[i] * m, qa = q[i] * a, qm = q[i] * m;
                p[i] = pa + qm;
                q[i] = qa + pm; // the middle image of an odd batch: p == q, the same value
            }
        }
    }
    for (int b = 0; b < B; b++) {
        labels2[b] = labels[B - 1 - b];
        lam[b] = (float)l;
    }
    return (float)l;
}
