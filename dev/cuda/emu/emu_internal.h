// CUDA emulation (a logic check, not a device run): what the emulator's own
// files share (not seen by the programs).
#ifndef FOLDNORM_EMU_INTERNAL_H
#define FOLDNORM_EMU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <functional>

#include "cuda_runtime.h"

// a created stream (cudaStreamCreate*): blocking unless cudaStreamNonBlocking
struct emu_stream {
    bool blocking;
};

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
unsigned long long pinned_copy_queued(void *host, size_t bytes, bool from_host,
                                      cudaStream_t stream); // its sequence number
// a queued copy into page-locked memory ran (its bytes are at host): they land at the wait
void pinned_copy_ran(unsigned long long seq);
unsigned long long pinned_copies_queued();
void pinned_wait(cudaStream_t stream, bool every_stream, unsigned long long upto, const char *by);

// emu_graph.cpp: the capture rules. An API call that a capture on this
// thread forbids (CUDA's codes: cudaErrorStreamCaptureUnsupported for an
// unsafe call or a sync of the capturing stream, cudaErrorStreamCaptureImplicit
// for legacy-stream work while a blocking stream captures) says so naming
// the call, invalidates the capture and returns the code (else cudaSuccess).
// unsafe: cudaMalloc and the like (allowed in cudaStreamCaptureModeRelaxed);
// else the call waits for stream `s` (refused when s captures) or, s ==
// nullptr, is legacy-stream work (refused while a blocking stream captures).
cudaError_t capture_refuses(const char *call, cudaStream_t s, bool unsafe);
bool stream_capturing_any(); // a capture is under way on this thread
// refuses `call` on the capturing stream s with `code`, saying why; invalidates the capture
cudaError_t capture_invalidate(cudaStream_t s, cudaError_t code, const char *call, const char *why);
// the same for work that cannot return a code (a kernel, a library call on stream 0): aborts
void capture_check_legacy(const char *what);
// a library call's work on `stream`: recorded when it captures, else run now
void stream_run(cudaStream_t stream, const char *what, std::function<void()> op);

// emu_streams.cpp: stream order. A point in a stream's work (an event's record):
// stream 0: pos is the stream-0 operation; else the first `pos` entries of the
// stream's queue; bound: the last stream-0 operation ordered before it
struct StreamMark {
    cudaStream_t stream;
    unsigned long long pos, bound;
};
void stream_created(cudaStream_t s);
void stream_destroyed(cudaStream_t s); // runs its queue
// an operation on s that runs now: stream 0 after the blocking streams' queued
// work (legacy semantics), a created stream after its own queue
void stream_op_now(cudaStream_t s, const char *what);
// op in s's order: now on stream 0 (as stream_op_now), else queued
void stream_submit(cudaStream_t s, const char *what, std::function<void()> op);
StreamMark stream_mark(cudaStream_t s);              // cudaEventRecord
void stream_wait(cudaStream_t s, const StreamMark &m); // cudaStreamWaitEvent
void stream_host_waits(const StreamMark &m);         // cudaEventSynchronize
void stream_synchronize(cudaStream_t s);             // cudaStreamSynchronize
void streams_synchronize_all();                      // cudaDeviceSynchronize and the implicit ones
// whether a queued operation is running, and the last stream-0 operation its
// stream's waits order it after (what it may touch must be older)
bool stream_op_queued();
unsigned long long stream_order_bound();
} // namespace emu

#endif
