// CUDA emulation (a logic check, not a device run): the race detector's
// interface to the scheduler, the device-memory arena and the access hooks
// (emu_race.cpp; internal, not seen by the programs). The kernels' objects
// are compiled with g++'s -fsanitize=thread instrumentation but linked
// without its runtime: every load and store calls a __tsan_* hook
// (emu_tsan.cpp), which returns at once unless a kernel's fiber runs.
#ifndef FOLDNORM_EMU_RACE_H
#define FOLDNORM_EMU_RACE_H

#include <stddef.h>
#include <stdint.h>

#include "emu_kernel.h"

namespace emu {
namespace race {

enum Access { READ, WRITE, ATOMIC };

// true while a fiber of a kernel runs on this OS thread (and checking or
// traffic counting is on): the hooks' only test outside kernels
extern __thread bool active;
// a load, store or atomic read-modify-write of n bytes at p, by the running fiber
void access(const void *p, size_t n, Access kind, const void *pc);

// from the scheduler (emu_fibers.cpp)
// kernel: the launch's text; instance: with its template arguments (EMU_KERNEL_LOG)
void launch_begins(const char *kernel, const char *instance, dim3 grid, dim3 block,
                   void *dynamic_shared, size_t bytes);
void launch_ends();
void block_begins(unsigned linear_block);
void fiber_enters(int thread); // the thread's linear index in its block
void fiber_leaves();
void warp_released(int warp);  // a __syncwarp, shuffle or vote released the warp
void block_released();         // a __syncthreads released the block
void shared_array(void *p, size_t bytes, const char *name); // a static __shared__ array's range
void dynamic_shared_named(const char *name); // the kernel's name for its extern __shared__ array
// from emu_mma.cpp: the running warp issued one mma.m16n8k16 (counted with the
// launch's bytes, emu_traffic.h)
void mma_issued();
// from emu_async.cpp: whether [p, p + n) lies in one static __shared__ array
// of the launch; a cp.async of n bytes (src_n of them read) issued by the
// running thread at pc, and landed at its wait (the detector holds the
// destination and the source to the rules of emu_async.h in between)
bool static_shared(const void *p, size_t n);
void async_issued(void *dst, const void *src, size_t n, size_t src_n, const void *pc);
void async_landed(void *dst, const void *src, size_t n, size_t src_n, const void *pc);

// from the arena (emu_arena.cpp): device memory is [lo, lo + bytes)
void global_memory_reserved(uintptr_t lo, size_t bytes);
void global_memory_freed(uintptr_t p, size_t bytes);

// from emu_streams.cpp: the stream-0 operation `pos` (1, 2, ...; 0: a
// created stream's) begins; the race detector stamps the device memory it
// writes with it (an emulator-side write: legacy_wrote)
void legacy_op_begins(unsigned long long pos, const char *what);
void legacy_wrote(const void *p, size_t bytes);
// a queued operation on a created stream touches [p, p + bytes): abort when
// stream-0 work its waits do not order it after wrote there
void stream_order_check(const void *p, size_t bytes, const char *what);

} // namespace race
} // namespace emu

#endif
