// expf for loops the compiler vectorizes (gcc does not vectorize libm's expf
// or tanhf without -ffast-math): x = n ln2 + r with n = round(x / ln2) (by the
// 1.5 * 2^23 shifter) and r in [-ln2/2, ln2/2] (Cody-Waite, two constants),
// exp(r) by Cephes' degree-5 polynomial, 2^n by the exponent bits. Inputs are
// clamped to [-87, 88] (a finite, normal result; NaN passes through). Relative
// error vs double-precision exp over every float in [-87, 88]: at most 8.4e-8
// (under 1 ulp; test_kernels, stride 1). Static inline (an exception to
// code-in-.c-files) so that it inlines into the callers' simd loops.
#ifndef FOLDNORM_FAST_EXP_H
#define FOLDNORM_FAST_EXP_H

#include <stdint.h>
#include <string.h>

#define FAST_EXP_MAX 88.0f
#define FAST_EXP_MIN (-87.0f)

static inline float fast_expf(float x) {
    x = x > FAST_EXP_MAX ? FAST_EXP_MAX : x;
    x = x < FAST_EXP_MIN ? FAST_EXP_MIN : x;
    const float shifter = 12582912.0f; // 1.5 * 2^23: t's low mantissa bits hold round(x / ln2)
    float t = x * 1.44269504088896341f + shifter;
    float n = t - shifter;
    float r = x - n * 0.693359375f;    // ln2 split in two: this product is exact
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    uint32_t t_bits;
    memcpy(&t_bits, &t, sizeof(t_bits));
    uint32_t scale_bits = (t_bits - 0x4B400000u + 127u) << 23; // 2^n, n in [-126, 127]
    float scale;
    memcpy(&scale, &scale_bits, sizeof(scale));
    return p * scale;
}

#endif
