// CUDA emulation (a logic check, not a device run): the tensor-core warp
// operations that llmc/cuda/mma.cuh calls under emulation in place of its
// PTX (dev/cuda/emu/emu_mma.cpp). Each is a rendezvous of the warp's 32
// lanes like a shuffle: every lane deposits its registers (or its row
// address), a warp barrier, every lane computes its own results from all
// the lanes' inputs, a second barrier before the staging is reused.
#ifndef FOLDNORM_EMU_MMA_H
#define FOLDNORM_EMU_MMA_H

#include <stdint.h>

namespace emu {
// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32: d = a b + c, this
// lane's registers of A (4 x bf16x2), B (2 x bf16x2), C and D (4 x f32)
void mma_m16n8k16_bf16(float d[4], const uint32_t a[4], const uint32_t b[2], const float c[4]);
// ldmatrix.sync.aligned.m8n8.x{count}{.trans}.shared.b16 into r[0..count):
// row_address is the row this lane supplies (lanes 0 .. 8 count - 1 are used)
void ldmatrix_m8n8(uint32_t *r, int count, bool trans, const void *row_address);
} // namespace emu

#endif
