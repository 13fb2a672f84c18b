// CUDA emulation (a logic check, not a device run): bfloat16 with the
// device's conversions. float -> bf16 rounds to nearest, ties to even (as
// __float2bfloat16 / cvt.rn.bf16.f32); NaN stays a quiet NaN.
#ifndef FOLDNORM_EMU_CUDA_BF16_H
#define FOLDNORM_EMU_CUDA_BF16_H

#include <stdint.h>
#include <string.h>

#include "emu_kernel.h"

namespace emu {
inline uint16_t float_to_bf16_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u); // round half to even on the 16 dropped bits
    return (uint16_t)(u >> 16);
}
inline float bf16_bits_to_float(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}
} // namespace emu

struct __nv_bfloat16 {
    uint16_t __x;
    __nv_bfloat16() = default;
    __nv_bfloat16(float f) : __x(emu::float_to_bf16_bits(f)) {}
    __nv_bfloat16(double f) : __x(emu::float_to_bf16_bits((float)f)) {}
    __nv_bfloat16(int i) : __x(emu::float_to_bf16_bits((float)i)) {}
    operator float() const { return emu::bf16_bits_to_float(__x); }
};
typedef __nv_bfloat16 nv_bfloat16;

struct __nv_bfloat162 {
    __nv_bfloat16 x, y;
};

inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 b) { return (float)b; }
inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a + (float)b; }
inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a * (float)b; }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) {
    __nv_bfloat16 b;
    b.__x = u;
    return b;
}
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.__x; }

#endif
