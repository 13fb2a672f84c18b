// CUDA emulation (a logic check, not a device run): cp.async (emu_async.h).
// Each thread of the running block has a queue of its copies; a copy holds
// its group (the count of the thread's commits before it: the uncommitted
// copies hold the open group, which no wait_group covers). A wait lands the
// covered copies in issue order, from the source bytes as they are then (a
// write to the source in between is a race the detector reports, so the
// moment cannot matter to a correct kernel).
#include <stdint.h>
#include <string.h>

#include <vector>

#include "cuda_runtime.h"
#include "emu_async.h"
#include "emu_internal.h"
#include "emu_race.h"

namespace emu {
namespace {

struct Copy {
    void *dst;
    const void *src;
    int bytes, src_bytes;
    unsigned long long group;
    const void *pc;
};

struct ThreadCopies {
    std::vector<Copy> pending;
    unsigned long long committed = 0; // groups committed so far: the open group's number
    unsigned long long block = 0;     // the block generation the queue belongs to
};

thread_local std::vector<ThreadCopies> threads;

int thread_index() {
    return (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
}

// the running thread's queue, emptied when a new block began
ThreadCopies &mine() {
    const int t = thread_index();
    if ((int)threads.size() <= t) threads.resize(t + 1);
    ThreadCopies &q = threads[t];
    if (q.block != block_generation()) {
        q.pending.clear();
        q.committed = 0;
        q.block = block_generation();
    }
    return q;
}

// the launch's dynamic buffer or, where the detector or the traffic count
// registered them, a static __shared__ array; else anything but device
// memory and the thread's stack (static arrays are then unregistered)
bool in_shared(const void *p, size_t n) {
    const uintptr_t a = (uintptr_t)p, lo = (uintptr_t)dynamic_shared_buffer();
    const size_t bytes = dynamic_shared_bytes();
    if (a >= lo && a + n <= lo + bytes) return true;
    if (race::active) return race::static_shared(p, n);
    return device_bytes_after(p) == 0 && !on_own_stack(p);
}

void land(const Copy &c) {
    memcpy(c.dst, c.src, (size_t)c.src_bytes);
    memset((char *)c.dst + c.src_bytes, 0, (size_t)(c.bytes - c.src_bytes));
    if (race::active) race::async_landed(c.dst, c.src, (size_t)c.bytes, (size_t)c.src_bytes, c.pc);
}

} // namespace

void cp_async(void *dst, const void *src, int bytes, int src_bytes, bool cache_global) {
    const void *pc = __builtin_return_address(0); // in the kernel (its inlined cp_async_*)
    const char *what = cache_global ? "cp.async.cg.shared.global" : "cp.async.ca.shared.global";
    if (bytes != 4 && bytes != 8 && bytes != 16) device_abort("%s of %d bytes: 4, 8 or 16", what, bytes);
    if (cache_global && bytes != 16) device_abort("%s of %d bytes: .cg copies 16", what, bytes);
    if (src_bytes < 0 || src_bytes > bytes) {
        device_abort("%s: src-size %d outside 0..%d", what, src_bytes, bytes);
    }
    if ((uintptr_t)dst % bytes != 0 || (src_bytes > 0 && (uintptr_t)src % bytes != 0)) {
        device_abort("%s: addresses %p (shared) and %p (global) must be %d-byte aligned", what, dst,
                     src, bytes);
    }
    if (!in_shared(dst, (size_t)bytes)) {
        device_abort("%s: the destination %p (%d bytes) is not in the block's shared memory", what,
                     dst, bytes);
    }
    if (src_bytes > 0 && device_bytes_after(src) < (size_t)src_bytes) {
        device_abort("%s: the source %p (%d bytes) is not in global memory (cudaMalloc) or "
                     "overruns its allocation", what, src, src_bytes);
    }
    ThreadCopies &q = mine();
    q.pending.push_back(Copy{dst, src, bytes, src_bytes, q.committed, pc});
    if (race::active) race::async_issued(dst, src, (size_t)bytes, (size_t)src_bytes, pc);
}

void cp_async_commit() { mine().committed++; }

void cp_async_wait(int n) {
    ThreadCopies &q = mine();
    if (n < 0) { // wait_all: every copy, committed or not
        q.committed++;
        n = 0;
    }
    // the groups older than the newest n committed ones land
    const unsigned long long upto = q.committed >= (unsigned long long)n ? q.committed - n : 0;
    size_t kept = 0;
    for (size_t i = 0; i < q.pending.size(); i++) {
        if (q.pending[i].group < upto) land(q.pending[i]);
        else q.pending[kept++] = q.pending[i];
    }
    q.pending.resize(kept);
}

void cp_async_thread_exits() {
    const int t = thread_index();
    if ((int)threads.size() <= t) return; // no thread of this index ever issued one
    const ThreadCopies &q = threads[t];
    if (q.block == block_generation() && !q.pending.empty()) {
        device_abort("the thread leaves the kernel with %zu cp.async copies not waited for (the "
                     "first to %p): a cp.async.wait_group or wait_all must cover every copy",
                     q.pending.size(), q.pending[0].dst);
    }
}

} // namespace emu
