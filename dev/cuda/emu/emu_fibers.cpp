// CUDA emulation (a logic check, not a device run): kernel launches. Blocks
// run one after another; each thread of a block is a fiber on its own stack, run
// round-robin until it blocks (barrier, shuffle) or ends (a 6-register
// x86-64 stack switch: ucontext's signal-mask system calls cost 10x more). A block barrier
// releases when every thread waits at it; a warp barrier when all 32 lanes
// do. A thread that ends while others wait at a barrier, or a shuffle with
// an exited lane, aborts with the kernel's name and the threads involved.
// The race detector (emu_race.cpp) hears of every fiber switch, block,
// warp release and block barrier release: its notion of "no barrier between".
// State is thread_local: data-parallel ranks (threads) launch concurrently.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_runtime.h"
#include "emu_async.h"
#include "emu_internal.h"
#include "emu_race.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#else
#define EMU_ASAN 0
#endif

#if !defined(__x86_64__)
#error "the emulator's fiber switch is written for x86-64"
#endif

// emu_switch(&save, next): push the callee-saved registers, save the stack
// pointer, load next's, pop its registers, return into it
extern "C" void emu_switch(void **save_sp, void *next_sp);
asm(R"(
    .text
    .globl emu_switch
    .type emu_switch, @function
emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size emu_switch, .-emu_switch
    .section .note.GNU-stack,"",@progbits
    .text
)");

namespace emu {
namespace {

const size_t STACK_BYTES = 256 << 10;
const int MAX_THREADS = 1024;
const unsigned MAX_GRID_YZ = 65535;
const size_t MAX_DYNAMIC_SHARED = 227 << 10; // Hopper's opt-in maximum per block
const size_t DEFAULT_DYNAMIC_SHARED = 48 << 10; // without cudaFuncSetAttribute

enum FiberState { RUNNABLE, AT_BLOCK_BARRIER, AT_WARP_BARRIER, DONE };

struct Fiber {
    void *sp = nullptr;
    void *stack = nullptr;
    FiberState state = DONE;
    void *fake_stack = nullptr; // ASan's bookkeeping of this fiber's stack
};

struct Scheduler {
    std::vector<Fiber> fibers; // stacks kept across launches
    void *main_sp = nullptr;
    const void *main_stack_bottom = nullptr;
    size_t main_stack_bytes = 0;
    int current = -1, threads = 0;
    const char *kernel = "";
    void (*body)(void *) = nullptr;
    void *body_ctx = nullptr;
    uint64_t slots[MAX_THREADS][WARP_SLOT_WORDS];
    std::vector<unsigned char> dynamic_shared; // at least 1 byte
    size_t dynamic_shared_bytes = 0;           // as the launch asked
    unsigned long long generation = 0;
};

thread_local Scheduler sched;

uint3 unflatten(unsigned i, dim3 d) { return uint3{i % d.x, (i / d.x) % d.y, i / (d.x * d.y)}; }

void switch_to_fiber(int i) {
    Fiber &f = sched.fibers[i];
    sched.current = i;
    threadIdx = unflatten((unsigned)i, blockDim);
#if EMU_ASAN
    void *main_fake = nullptr;
    __sanitizer_start_switch_fiber(&main_fake, f.stack, STACK_BYTES);
#endif
    race::fiber_enters(i);
    emu_switch(&sched.main_sp, f.sp);
    race::fiber_leaves();
#if EMU_ASAN
    __sanitizer_finish_switch_fiber(main_fake, nullptr, nullptr);
#endif
    sched.current = -1;
}

// from a fiber back to the scheduler; exiting: the fiber never resumes
void switch_to_scheduler(bool exiting) {
    Fiber &f = sched.fibers[sched.current];
#if EMU_ASAN
    __sanitizer_start_switch_fiber(exiting ? nullptr : &f.fake_stack, sched.main_stack_bottom,
                                   sched.main_stack_bytes);
#else
    (void)exiting;
#endif
    emu_switch(&f.sp, sched.main_sp);
#if EMU_ASAN
    __sanitizer_finish_switch_fiber(f.fake_stack, nullptr, nullptr);
#endif
}

extern "C" [[noreturn]] void fiber_entry() {
#if EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &sched.main_stack_bottom, &sched.main_stack_bytes);
#endif
    sched.body(sched.body_ctx);
    cp_async_thread_exits(); // no copy may outlive its thread
    sched.fibers[sched.current].state = DONE;
    switch_to_scheduler(true);
    abort(); // never resumed
}

void start_fibers(int n) {
    if ((int)sched.fibers.size() < n) sched.fibers.resize(n);
    for (int i = 0; i < n; i++) {
        Fiber &f = sched.fibers[i];
        if (f.stack == nullptr) {
            f.stack = mmap(nullptr, STACK_BYTES, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (f.stack == MAP_FAILED) device_abort("cannot map a fiber stack");
        }
#if EMU_ASAN
        // the last fiber on this stack never returned from fiber_entry: clear its frames' poison
        __asan_unpoison_memory_region(f.stack, STACK_BYTES);
#endif
        // a frame that emu_switch "returns" into fiber_entry with the ABI's
        // alignment: (sp + 8) % 16 == 0 at its first instruction
        void **top = (void **)((char *)f.stack + STACK_BYTES);
        top[-1] = nullptr;                  // fiber_entry's (unused) return address
        top[-2] = (void *)&fiber_entry;     // popped by emu_switch's ret
        for (int r = 3; r <= 8; r++) top[-r] = nullptr; // rbp rbx r12-r15
        f.sp = (void *)(top - 8);
        f.state = RUNNABLE;
    }
}

const char *state_name(FiberState s) {
    switch (s) {
    case RUNNABLE: return "running";
    case AT_BLOCK_BARRIER: return "at __syncthreads";
    case AT_WARP_BARRIER: return "at a warp shuffle/vote";
    default: return "exited";
    }
}

[[noreturn]] void report_deadlock(const char *why, int a, int b) {
    uint3 ta = unflatten((unsigned)a, blockDim), tb = unflatten((unsigned)b, blockDim);
    device_abort("%s: thread (%u,%u,%u) %s while thread (%u,%u,%u) is %s", why, ta.x, ta.y, ta.z,
                 state_name(sched.fibers[a].state), tb.x, tb.y, tb.z,
                 state_name(sched.fibers[b].state));
}

// every fiber is blocked or done: release a warp or the block, else abort
void release_barriers() {
    const int n = sched.threads;
    bool released = false;
    for (int w = 0; w * 32 < n; w++) {
        const int lo = w * 32, hi = lo + 32 < n ? lo + 32 : n;
        int waiting = -1, other = -1;
        for (int i = lo; i < hi; i++) {
            if (sched.fibers[i].state == AT_WARP_BARRIER) waiting = i;
            else other = i;
        }
        if (waiting < 0) continue;
        if (other >= 0) {
            report_deadlock(sched.fibers[other].state == DONE
                                ? "shuffle/vote with an exited lane"
                                : "divergent warp: lanes at different barriers",
                            other, waiting);
        }
        for (int i = lo; i < hi; i++) sched.fibers[i].state = RUNNABLE;
        race::warp_released(w);
        released = true;
    }
    if (released) return;
    int waiting = -1, done = -1;
    for (int i = 0; i < n; i++) {
        if (sched.fibers[i].state == AT_BLOCK_BARRIER) waiting = i;
        else done = i;
    }
    if (waiting < 0) return; // all done
    if (done >= 0) report_deadlock("divergent __syncthreads", done, waiting);
    for (int i = 0; i < n; i++) sched.fibers[i].state = RUNNABLE;
    race::block_released();
}

// EMU_FIBER_ORDER=reverse runs the threads last to first: a missing barrier
// shows only where a thread reads what a thread run after it writes, so the
// two orders together see both directions
bool reverse_order() {
    static const bool reverse = [] {
        const char *v = getenv("EMU_FIBER_ORDER");
        return v != nullptr && strcmp(v, "reverse") == 0;
    }();
    return reverse;
}

void run_block() {
    start_fibers(sched.threads);
    sched.generation++;
    const bool reverse = reverse_order();
    for (;;) {
        bool live = false;
        for (int k = 0; k < sched.threads; k++) {
            const int i = reverse ? sched.threads - 1 - k : k;
            if (sched.fibers[i].state == RUNNABLE) switch_to_fiber(i);
            live = live || sched.fibers[i].state != DONE;
        }
        if (!live) return;
        release_barriers();
    }
}

void check_config(const char *name, const void *kernel, const LaunchConfig &c) {
    const unsigned long long threads = (unsigned long long)c.block.x * c.block.y * c.block.z;
    if (c.grid.x == 0 || c.grid.y == 0 || c.grid.z == 0 || threads == 0) {
        device_abort("launch of %s: empty configuration grid (%u,%u,%u) block (%u,%u,%u)", name,
                     c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y, c.block.z);
    }
    if (threads > (unsigned long long)MAX_THREADS || c.block.z > 64) {
        device_abort("launch of %s: block (%u,%u,%u) exceeds the device's 1024 threads", name,
                     c.block.x, c.block.y, c.block.z);
    }
    if (c.grid.y > MAX_GRID_YZ || c.grid.z > MAX_GRID_YZ || c.grid.x > 2147483647u) {
        device_abort("launch of %s: grid (%u,%u,%u) exceeds the device's limits", name, c.grid.x,
                     c.grid.y, c.grid.z);
    }
    const size_t allowed = func_max_dynamic_shared(kernel, DEFAULT_DYNAMIC_SHARED);
    if (c.shared_bytes > MAX_DYNAMIC_SHARED || c.shared_bytes > allowed) {
        device_abort("launch of %s: %zu bytes of dynamic shared memory (allowed %zu: 48 KB, up to "
                     "227 KB after cudaFuncSetAttribute)", name, c.shared_bytes,
                     allowed < MAX_DYNAMIC_SHARED ? allowed : MAX_DYNAMIC_SHARED);
    }
}

} // namespace

void check_launch(const char *name, const void *kernel, const LaunchConfig &cfg) {
    if (sched.current >= 0) device_abort("launch of %s from device code", name);
    check_config(name, kernel, cfg);
    check_stream(cfg.stream, name);
}

void run_grid(const char *name, const char *instance, const void *kernel, const LaunchConfig &cfg,
              void (*body)(void *), void *ctx) {
    if (sched.current >= 0) device_abort("launch of %s from device code", name);
    check_config(name, kernel, cfg);
    check_stream(cfg.stream, name);
    stream_op_now(cfg.stream, name); // in stream order (emu_streams.cpp)
    sched.kernel = name;
    sched.body = body;
    sched.body_ctx = ctx;
    sched.threads = (int)(cfg.block.x * cfg.block.y * cfg.block.z);
    gridDim = cfg.grid;
    blockDim = cfg.block;
    sched.dynamic_shared.resize(cfg.shared_bytes > 0 ? cfg.shared_bytes : 1);
    race::launch_begins(name, instance, cfg.grid, cfg.block, sched.dynamic_shared.data(),
                        cfg.shared_bytes);
    sched.dynamic_shared_bytes = cfg.shared_bytes;
    for (unsigned z = 0; z < cfg.grid.z; z++) {
        for (unsigned y = 0; y < cfg.grid.y; y++) {
            for (unsigned x = 0; x < cfg.grid.x; x++) {
                blockIdx = uint3{x, y, z};
                // never-written shared memory reads as NaN, as device memory does
                memset(sched.dynamic_shared.data(), 0xff, sched.dynamic_shared.size());
                race::block_begins(x + cfg.grid.x * (y + cfg.grid.y * z));
                run_block();
            }
        }
    }
    race::launch_ends();
    sched.kernel = "";
    count_launch();
}

void syncthreads() {
    if (sched.current < 0) device_abort("__syncthreads outside a kernel");
    sched.fibers[sched.current].state = AT_BLOCK_BARRIER;
    switch_to_scheduler(false);
}

void warp_barrier(unsigned mask, const char *what) {
    if (sched.current < 0) device_abort("%s outside a kernel", what);
    if (mask != 0xffffffffu) {
        device_abort("%s with mask %#x: the emulator supports full warps only", what, mask);
    }
    const int warp_start = sched.current / 32 * 32;
    if (warp_start + 32 > sched.threads) {
        device_abort("%s in a partial warp (block of %d threads): lanes %d.. do not exist", what,
                     sched.threads, sched.threads);
    }
    sched.fibers[sched.current].state = AT_WARP_BARRIER;
    switch_to_scheduler(false);
}

uint64_t *warp_slot(int lane) { return sched.slots[sched.current / 32 * 32 + lane]; }
int lane_id() { return sched.current % 32; }
void *dynamic_shared(const char *name) {
    race::dynamic_shared_named(name);
    return sched.dynamic_shared.data();
}
void *dynamic_shared_buffer() { return sched.dynamic_shared.data(); }
size_t dynamic_shared_bytes() { return sched.current >= 0 ? sched.dynamic_shared_bytes : 0; }
bool on_own_stack(const void *p) {
    if (sched.current < 0) return false;
    const uintptr_t lo = (uintptr_t)sched.fibers[sched.current].stack, a = (uintptr_t)p;
    return a >= lo && a < lo + STACK_BYTES;
}
unsigned long long block_generation() { return sched.generation; }

// "const char* emu::kernel_name() [with auto K = f<64, true>]" or "... [with
// auto K = &(void f<64, true>(float*, int))]" -> "f<64, true>", kept for the run
const char *kernel_instance_name(const char *pretty) {
    static std::mutex mu;
    static std::map<const char *, std::string> names; // by the compiler's string
    std::lock_guard<std::mutex> lock(mu);
    auto it = names.find(pretty);
    if (it != names.end()) return it->second.c_str();
    std::string s = pretty;
    const size_t k = s.find("K = ");
    if (k != std::string::npos) {
        s = s.substr(k + 4);
        if (!s.empty() && s.back() == ']') s.pop_back();
        if (s.compare(0, 2, "&(") == 0 && s.back() == ')') s = s.substr(2, s.size() - 3);
        int depth = 0;
        size_t params = s.size(), type_end = 0;
        for (size_t i = 0; i < s.size() && params == s.size(); i++) {
            depth += s[i] == '<' ? 1 : s[i] == '>' ? -1 : 0;
            if (depth == 0 && s[i] == '(') params = i;
            if (depth == 0 && s[i] == ' ') type_end = i + 1; // after the return type
        }
        s = s.substr(type_end, params - type_end);
    }
    return names.emplace(pretty, s).first->second.c_str();
}

void shared_array_begins(void *p, size_t bytes, const char *name) {
    memset(p, 0xff, bytes);
    race::shared_array(p, bytes, name);
}

void device_abort(const char *fmt, ...) {
    fprintf(stderr, "emulated CUDA error");
    if (sched.kernel[0] != '\0') {
        fprintf(stderr, " in %s block (%u,%u,%u)", sched.kernel, blockIdx.x, blockIdx.y,
                blockIdx.z);
        if (sched.current >= 0) {
            fprintf(stderr, " thread (%u,%u,%u)", threadIdx.x, threadIdx.y, threadIdx.z);
        }
    }
    fprintf(stderr, ": ");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    abort();
}

} // namespace emu
