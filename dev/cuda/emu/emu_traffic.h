// CUDA emulation (a logic check, not a device run): what each kernel asked
// of the device, counted by the emulator (dev/cuda/emu/emu_traffic.cpp):
//   - global-memory traffic, by the access hooks: the bytes its loads,
//     stores and atomics touched in device memory, summed over its launches
//     (no caches, no coalescing: what the code asks for, not what a device
//     would move);
//   - tensor-core work: the warp-wide mma.m16n8k16 it issued (emu_mma.cpp;
//     each is 2 x 16 x 8 x 16 = 4096 FLOPs);
//   - shared-memory traffic: the bytes its threads' loads, stores and
//     atomics touched in shared memory (static __shared__ arrays and the
//     launch's dynamic buffer), ldmatrix's reads included (each lane's 4
//     bytes a matrix: 128 B a warp-wide 8x8 matrix, emu_mma.cpp); per lane,
//     as issued (a broadcast read by 32 lanes is 32 reads; no bank model);
//   - the emulated cuBLAS / cuBLASLt calls (emu_blas.cpp) under their entry
//     point's name: 2 m n k FLOPs a GEMM of each batch, and the bytes of its
//     operands, each read once (C only where beta != 0) and D written once
//     (a device's tiles read A and B more often; what reaches HBM depends on
//     its caches).
// Counted whenever the race detector runs or EMU_TRAFFIC=1 is set;
// EMU_TRAFFIC=1 also prints the table at exit. Not counted in the SAN=1
// build (no hooks).
#ifndef FOLDNORM_EMU_TRAFFIC_H
#define FOLDNORM_EMU_TRAFFIC_H

#include <stdio.h>

namespace emu {

struct KernelTraffic {
    unsigned long long launches, bytes_read, bytes_written;
    unsigned long long mma;        // warp-wide mma.m16n8k16 (bf16, fp32 accumulators)
    unsigned long long gemm_flops; // the emulated cuBLAS's 2 m n k per GEMM
    unsigned long long shared_read, shared_written; // shared-memory bytes, ldmatrix in shared_read
};
const unsigned long long MMA_M16N8K16_FLOPS = 2 * 16 * 8 * 16;

bool traffic_counted(); // false: this build or run counts nothing
// this process's launches of the kernel named as at its launch ("kernel<true>"), all ranks
KernelTraffic kernel_traffic(const char *kernel);
KernelTraffic traffic_total(); // every kernel and library call of the table
void traffic_reset();          // empties the table (a program that counts one pass)
// one line a kernel: launches, bytes read, bytes written, mma, GEMM FLOPs, shared bytes
// read, shared bytes written
void print_traffic(FILE *f);

// the emulator's side: EMU_TRAFFIC=1, and one launch's (or library call's) counts
bool traffic_requested();
void traffic_add(const char *kernel, unsigned long long bytes_read, unsigned long long bytes_written,
                 unsigned long long mma, unsigned long long gemm_flops,
                 unsigned long long shared_read = 0, unsigned long long shared_written = 0);

} // namespace emu

#endif
