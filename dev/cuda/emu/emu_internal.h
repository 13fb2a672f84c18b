// CUDA emulation (a logic check, not a device run): what the emulator's own
// files share (not seen by the programs).
#ifndef FOLDNORM_EMU_INTERNAL_H
#define FOLDNORM_EMU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "cuda_runtime.h"

namespace emu {
// dynamic shared memory a kernel may use (cudaFuncSetAttribute), else fallback
size_t func_max_dynamic_shared(const void *kernel, size_t fallback);
// aborts on a stream that was never created or was destroyed
void check_stream(cudaStream_t s, const char *what);
void count_launch();
// alignment of a device pointer in bytes (largest power of two <= 256)
unsigned pointer_alignment(const void *p);
// the cudaMalloc holding address a: its start and size (0, 0: none)
void device_allocation(uintptr_t a, uintptr_t *start, size_t *bytes);
// device memory from the race detector's arena (emu_arena.cpp); nullptr: use the heap
void *arena_alloc(size_t bytes);
bool arena_free(void *p, size_t bytes); // false: p is not arena memory
// the running launch's extern __shared__ buffer size in bytes (0 outside a kernel)
size_t dynamic_shared_bytes();
void *dynamic_shared_buffer(); // its start (the kernel's own view: emu::dynamic_shared)
// whether p lies on the running thread's own fiber stack (its local memory)
bool on_own_stack(const void *p);
// emu_pinned.cpp: a cudaMemcpyAsync between the device and the page-locked
// host bytes at host (from_host: it read them; else it wrote them); the
// copies queued so far on this thread (an event's mark); and a host wait that
// covers stream's (every stream's) copies up to mark `upto`
void pinned_copy_queued(void *host, size_t bytes, bool from_host, cudaStream_t stream);
unsigned long long pinned_copies_queued();
void pinned_wait(cudaStream_t stream, bool every_stream, unsigned long long upto, const char *by);
} // namespace emu

#endif
