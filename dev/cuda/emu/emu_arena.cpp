// CUDA emulation (a logic check, not a device run): where device memory
// lives when the race detector is built (EMU_RACE). cudaMalloc takes its
// memory from one reserved address range, so a hook tells device memory
// from host memory with one comparison and finds its shadow by offset
// (emu_race.cpp). Addresses are handed out once, 256-byte aligned (as
// cudaMalloc); a freed allocation's pages go back to the system. Without
// EMU_RACE (the SAN=1 build) there is no arena: cudaMalloc uses the heap,
// where ASan sees every overrun.
#include <stdint.h>
#include <sys/mman.h>

#include <mutex>

#include "emu_internal.h"
#include "emu_race.h"

namespace emu {

#ifdef EMU_RACE
namespace {

const size_t ARENA_BYTES = (size_t)32 << 30; // address space only (MAP_NORESERVE)
const uintptr_t PAGE = 4096;

std::mutex arena_mutex;
std::once_flag arena_once;
uintptr_t arena_lo = 0, arena_next = 0, arena_hi = 0;

void reserve() {
    void *m = mmap(nullptr, ARENA_BYTES, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return; // cudaMalloc falls back to the heap: unchecked
    arena_lo = arena_next = (uintptr_t)m;
    arena_hi = arena_lo + ARENA_BYTES;
    race::global_memory_reserved(arena_lo, ARENA_BYTES);
}

} // namespace

void *arena_alloc(size_t bytes) {
    std::call_once(arena_once, reserve);
    std::lock_guard<std::mutex> lock(arena_mutex);
    if (arena_lo == 0 || bytes > arena_hi - arena_next) return nullptr;
    void *p = (void *)arena_next;
    arena_next = (arena_next + bytes + 255) & ~(uintptr_t)255;
    return p;
}

bool arena_free(void *p, size_t bytes) {
    const uintptr_t a = (uintptr_t)p;
    {
        std::lock_guard<std::mutex> lock(arena_mutex);
        if (a < arena_lo || a >= arena_hi) return false;
    }
    const uintptr_t lo = (a + PAGE - 1) & ~(PAGE - 1), hi = (a + bytes) & ~(PAGE - 1);
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED); // never handed out again
    race::global_memory_freed(a, bytes);
    return true;
}
#else
void *arena_alloc(size_t) { return nullptr; }
bool arena_free(void *, size_t) { return false; }
#endif

} // namespace emu
