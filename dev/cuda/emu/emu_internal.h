// CUDA emulation (a logic check, not a device run): what the emulator's own
// files share (not seen by the programs).
#ifndef FOLDNORM_EMU_INTERNAL_H
#define FOLDNORM_EMU_INTERNAL_H

#include <stddef.h>

#include "cuda_runtime.h"

namespace emu {
// dynamic shared memory a kernel may use (cudaFuncSetAttribute), else fallback
size_t func_max_dynamic_shared(const void *kernel, size_t fallback);
// aborts on a stream that was never created or was destroyed
void check_stream(cudaStream_t s, const char *what);
void count_launch();
// alignment of a device pointer in bytes (largest power of two <= 256)
unsigned pointer_alignment(const void *p);
} // namespace emu

#endif
