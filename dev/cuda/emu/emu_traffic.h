// CUDA emulation (a logic check, not a device run): each kernel's
// global-memory traffic, counted by the access hooks (dev/cuda/emu/
// emu_traffic.cpp): the bytes its loads, stores and atomics touched in
// device memory, summed over its launches (no caches, no coalescing: what
// the code asks for, not what a device would move). Counted whenever the
// race detector runs or EMU_TRAFFIC=1 is set; EMU_TRAFFIC=1 also prints the
// table at exit. Not counted in the SAN=1 build (no hooks).
#ifndef FOLDNORM_EMU_TRAFFIC_H
#define FOLDNORM_EMU_TRAFFIC_H

#include <stdio.h>

namespace emu {

struct KernelTraffic {
    unsigned long long launches, bytes_read, bytes_written;
};

bool traffic_counted(); // false: this build or run counts nothing
// this process's launches of the kernel named as at its launch ("kernel<true>"), all ranks
KernelTraffic kernel_traffic(const char *kernel);
void print_traffic(FILE *f); // one line a kernel: launches, bytes read, bytes written

// the emulator's side: EMU_TRAFFIC=1, and one launch's counts
bool traffic_requested();
void traffic_add(const char *kernel, unsigned long long bytes_read, unsigned long long bytes_written);

} // namespace emu

#endif
