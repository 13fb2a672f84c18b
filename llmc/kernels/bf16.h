// bf16 = the upper 16 bits of an fp32, rounded to nearest even; a NaN stays a
// (quiet) NaN instead of rounding to inf. Inline so that the loops that
// round (matmul_to_bf16, AdamW's fused rounding) vectorise it.
#ifndef FOLDNORM_BF16_H
#define FOLDNORM_BF16_H

#include <stdint.h>
#include <string.h>

static inline uint16_t bf16_from_float(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof(u));
    uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    return (uint16_t)((u & 0x7FFFFFFFu) > 0x7F800000u ? (u >> 16) | 0x40u : rounded);
}

// The fp32 value of a bf16 (exact: bf16 is fp32's upper half).
static inline float bf16_to_float(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float x;
    memcpy(&x, &u, sizeof(x));
    return x;
}

#endif
