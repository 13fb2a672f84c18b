// CUDA emulation (a logic check, not a device run): the race detector, the
// emulator's racecheck. Every load and store of an emulated kernel reaches
// access() (through emu_tsan.cpp's hooks); shared memory (the static
// __shared__ arrays as they are declared, the launch's dynamic buffer) and
// device memory (the arena, emu_arena.cpp) have a shadow cell per 2 bytes
// that holds the last write and the reads since. Rules:
//   threads of a block: between two __syncthreads, an access to what another
//     thread wrote, or a write to what another thread read, is a race, unless
//     both threads are lanes of one warp and a warp barrier (__syncwarp, a
//     shuffle, a vote) of that warp lies between them;
//   blocks of a launch (device memory only): a write to what another block
//     wrote or read, or a read of what another block wrote, is a race;
//   atomics race with plain accesses only;
//   cp.async (emu_async.h): the copy writes its destination and reads its
//     source at issue and again where its thread's wait lands it; in between,
//     any access to the destination and any write to the source is a race.
// A race aborts, naming the kernel, the memory, both threads and both
// source lines (addr2line on the recorded code addresses). EMU_RACECHECK=0
// turns it off, =shared checks shared memory only. State is per OS thread
// (ranks as threads), as the scheduler's. EMU_KERNEL_LOG=FILE appends, at
// exit, one line per kernel instance the process launched (NAME with its
// template arguments, "norm_backward_kernel<false>"): "checked NAME" when
// some launch of it with two or more warps a block ran with the race
// detector on (so that races between warps can show), "one-warp NAME" when
// its race-checked launches had one warp a block, else "unchecked NAME"; and
// "multi-warp NAME" when some launch of it (checked or not) had two or more.
// The suites hold their race-checked runs to cover every kernel instance they
// launch, with two warps where any launch of it has them (test/emu_race_subset.sh).
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "emu_internal.h"
#include "emu_race.h"
#include "emu_traffic.h"

namespace emu {
namespace race {

__thread bool active = false;

namespace {

enum Mode { OFF, SHARED, ALL };
enum Conflict { NONE, AFTER_WRITE, AFTER_READ };

// thread fields: a thread's linear index (10 bits) and flags
const uint16_t T_TID = 0x03ff;
const uint16_t T_VALID = 0x8000;  // recorded in the current barrier interval
const uint16_t T_ATOMIC = 0x4000; // w: the write was an atomic
const uint16_t T_MANY = 0x2000;   // w: several threads' atomics; r: several readers at r_epoch
const uint16_t T_MIXED = 0x1000;  // r: readers in several warps (r_epoch: the second warp's)
// block fields: 1 + the block's linear index; B_MANY: several blocks; B_ATOMIC: by atomics
const uint32_t B_ATOMIC = 0x80000000u, B_MANY = 0x7fffffffu;

// the shadow of 2 bytes (bf16 is the smallest type the kernels store)
struct Cell {
    uint32_t launch;           // the launch w_block and r_block belong to
    uint32_t w_block, r_block; // the last write's block, the reads' block(s); 0: none
    uint32_t sync;             // the block's barrier interval the thread fields belong to
    uint16_t w_tid, r_tid;     // the last write's thread, the reads' thread
    uint16_t w_epoch, r_epoch; // their warp's barrier count at the access
    uint32_t w_pc, r_pc;       // their code addresses (offsets in the program, for addr2line)
};
static_assert(sizeof(Cell) == 32, "a shadow cell is 32 bytes: the shadow is 16x the memory");
const size_t GRANULE = 2;

struct Region {
    uintptr_t lo;
    size_t bytes;
    size_t cell; // its first cell in the shared shadow
    const char *name;
};
const int MAX_REGIONS = 64;

// one OS thread's launch (plain data: __thread needs no constructor)
struct State {
    const char *kernel, *instance; // the launch's text, the kernel with its template arguments
    unsigned grid_x, grid_y, block_x, block_y;
    bool check, check_global, on;
    uint32_t launch, sync, block; // block: 1 + its linear index
    int tid;
    uint16_t epoch[32];
    int regions, dynamic_region; // dynamic_region: the extern __shared__ buffer's, or -1
    Region region[MAX_REGIONS];
    Cell *shared_cells;
    size_t shared_used, shared_capacity;
    // per shared granule: a cp.async pending there (tid + 1, 0: none) and its
    // issue's code address; async_pending counts the block's pending copies
    uint16_t *pending_tid;
    uint32_t *pending_pc;
    unsigned long long async_pending;
    unsigned long long read_bytes, written_bytes, mmas;
    unsigned long long shared_read_bytes, shared_written_bytes; // ldmatrix's reads included
    uintptr_t code_bias; // the program's load address: code offsets fit 32 bits
};
__thread State st;

std::atomic<uint32_t> launches{0}, intervals{0};
Cell *global_cells = nullptr;
// per granule of device memory: the stream-0 operation that last wrote it
// (its rank's, emu_streams.cpp), 0: none or a created stream's work
uint32_t *legacy_writers = nullptr;
__thread uint32_t legacy_stamp;
// the names of a thread's recent stream-0 operations, for the reports
const unsigned NAMES = 4096;
__thread const char *legacy_names[NAMES];
uintptr_t global_lo = 0;
size_t global_bytes = 0;

// the sources of the running block's pending cp.async copies
struct AsyncSource {
    uintptr_t lo;
    size_t bytes;
    const void *dst;
    int tid;
    uint32_t pc;
};
thread_local std::vector<AsyncSource> async_sources;

Mode mode() {
#ifdef EMU_RACE
    static const Mode m = [] {
        const char *v = getenv("EMU_RACECHECK");
        if (v == nullptr || strcmp(v, "1") == 0) return ALL;
        if (strcmp(v, "0") == 0) return OFF;
        if (strcmp(v, "shared") == 0) return SHARED;
        fprintf(stderr, "emulated CUDA: EMU_RACECHECK=%s: expected 1 (default), shared or 0\n", v);
        exit(2);
    }();
    return m;
#else
    return OFF; // no hooks in this build (SAN=1: ASan cannot be combined with the instrumentation)
#endif
}

uintptr_t program_bias() {
    static const uintptr_t bias = [] {
        uintptr_t b = 0;
        dl_iterate_phdr([](struct dl_phdr_info *info, size_t, void *data) {
            *(uintptr_t *)data = info->dlpi_addr; // the first object is the program
            return 1;
        }, &b);
        return b;
    }();
    return bias;
}

uint32_t next_interval() {
    uint32_t s = intervals.fetch_add(1, std::memory_order_relaxed) + 1;
    return s != 0 ? s : intervals.fetch_add(1, std::memory_order_relaxed) + 1;
}

void add_region(uintptr_t lo, size_t bytes, const char *name) {
    if (st.regions == MAX_REGIONS) {
        device_abort("race detector: more than %d __shared__ arrays in one launch", MAX_REGIONS);
    }
    const size_t cells = st.check ? bytes / GRANULE + 1 : 0; // counting traffic only: no shadow
    if (st.shared_used + cells > st.shared_capacity) {
        size_t cap = st.shared_capacity > 0 ? st.shared_capacity : 4096;
        while (cap < st.shared_used + cells) cap *= 2;
        Cell *c = (Cell *)realloc(st.shared_cells, cap * sizeof(Cell));
        uint16_t *pt = (uint16_t *)realloc(st.pending_tid, cap * sizeof(uint16_t));
        uint32_t *pp = (uint32_t *)realloc(st.pending_pc, cap * sizeof(uint32_t));
        if (c == nullptr || pt == nullptr || pp == nullptr) {
            device_abort("race detector: out of memory for the shared-memory shadow");
        }
        memset(c + st.shared_capacity, 0, (cap - st.shared_capacity) * sizeof(Cell));
        memset(pt + st.shared_capacity, 0, (cap - st.shared_capacity) * sizeof(uint16_t));
        st.shared_cells = c;
        st.pending_tid = pt;
        st.pending_pc = pp;
        st.shared_capacity = cap;
    }
    st.region[st.regions++] = Region{lo, bytes, st.shared_used, name};
    st.shared_used += cells;
}

// ---- the rules ------------------------------------------------------------

Conflict block_conflict(Cell &c, Access kind) {
    if (c.launch != st.launch) { // nothing of this launch yet
        c.launch = st.launch;
        c.w_block = c.r_block = 0;
        return NONE;
    }
    if (c.w_block != 0 && (c.w_block & ~B_ATOMIC) != st.block &&
        !(kind == ATOMIC && (c.w_block & B_ATOMIC))) {
        return AFTER_WRITE;
    }
    if (kind != READ && c.r_block != 0 && c.r_block != st.block) return AFTER_READ;
    return NONE;
}

void block_record(Cell &c, Access kind) {
    if (kind == READ) {
        c.r_block = c.r_block == 0 || c.r_block == st.block ? st.block : B_MANY;
    } else if (kind == ATOMIC) {
        const bool others = (c.w_block & B_ATOMIC) && (c.w_block & ~B_ATOMIC) != st.block;
        c.w_block = B_ATOMIC | (others ? B_MANY : st.block);
    } else {
        c.w_block = st.block;
    }
}

Conflict thread_conflict(Cell &c, Access kind, int t, uint16_t e) {
    if (c.sync != st.sync) { // nothing of this barrier interval yet (the threads stay for reports)
        c.sync = st.sync;
        c.w_tid &= T_TID;
        c.r_tid &= T_TID;
        return NONE;
    }
    const int w = t >> 5;
    if (c.w_tid & T_VALID) {
        const int wt = c.w_tid & T_TID;
        const bool ordered = !(c.w_tid & T_MANY) && (wt == t || ((wt >> 5) == w && c.w_epoch != e));
        if (!ordered && !(kind == ATOMIC && (c.w_tid & T_ATOMIC))) return AFTER_WRITE;
    }
    if (kind != READ && (c.r_tid & T_VALID)) {
        const int rt = c.r_tid & T_TID;
        const bool ordered = !(c.r_tid & T_MIXED) && (rt >> 5) == w &&
                             (c.r_epoch != e || (rt == t && !(c.r_tid & T_MANY)));
        if (!ordered) return AFTER_READ;
    }
    return NONE;
}

void thread_record(Cell &c, Access kind, int t, uint16_t e, uint32_t pc) {
    if (kind == READ) {
        const int rt = c.r_tid & T_TID;
        if (!(c.r_tid & T_VALID)) {
            c.r_tid = (uint16_t)(t | T_VALID);
            c.r_epoch = e;
            c.r_pc = pc;
        } else if (c.r_tid & T_MIXED) {
            // readers in two warps: every later write races, nothing more to learn
        } else if ((rt >> 5) != (t >> 5)) {
            c.r_tid |= T_MIXED;
            c.r_epoch = (uint16_t)t; // the second warp's reader, for the report
        } else if (c.r_epoch != e) { // the earlier reads are ordered before the warp's barrier
            c.r_tid = (uint16_t)(t | T_VALID);
            c.r_epoch = e;
            c.r_pc = pc;
        } else if (rt != t) {
            c.r_tid |= T_MANY;
        }
        return;
    }
    uint16_t flags = T_VALID;
    if (kind == ATOMIC) {
        flags |= T_ATOMIC;
        const bool was_atomic = (c.w_tid & (T_VALID | T_ATOMIC)) == (T_VALID | T_ATOMIC);
        if (was_atomic && ((c.w_tid & T_TID) != t || (c.w_tid & T_MANY))) flags |= T_MANY;
    }
    c.w_tid = (uint16_t)(t | flags);
    c.w_epoch = e;
    c.w_pc = pc;
    c.r_tid &= T_TID; // the reads before this write are ordered before it (else it raced)
}

// ---- reports --------------------------------------------------------------

std::string program_path() {
    char path[4096];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (n <= 0) return "";
    path[n] = '\0';
    return path;
}

// a source path as the repository names it: the build's copies keep the
// original lines (#line), so build/emu/src/X:N is X:N
std::string short_path(std::string path) {
    char cwd[4096];
    if (getcwd(cwd, sizeof(cwd)) != nullptr) {
        const std::string prefix = std::string(cwd) + "/";
        if (path.compare(0, prefix.size(), prefix) == 0) path = path.substr(prefix.size());
    }
    const size_t copy = path.rfind("emu/src/");
    if (copy != std::string::npos) path = path.substr(copy + 8);
    return path;
}

// "void f<true>(float*, int)" -> "f<true>"
std::string function_name(const char *f) {
    std::string s(f, strcspn(f, "("));
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
        depth += s[i] == '>' ? 1 : s[i] == '<' ? -1 : 0;
        if (s[i] == ' ' && depth == 0) return s.substr(i + 1); // after the return type
    }
    return s;
}

// "file:line (function)" of the access, and where in the kernel it was
// inlined when that is another function (addr2line on the program)
std::string source_of(uint32_t pc) {
    if (pc == 0) return "an unrecorded place";
    char cmd[4400];
    snprintf(cmd, sizeof(cmd), "addr2line -C -f -i -e '%s' 0x%lx 2>/dev/null",
             program_path().c_str(), (unsigned long)pc - 1); // the return address follows the call
    FILE *f = popen(cmd, "r");
    std::string first, kernel;
    if (f != nullptr) {
        const std::string name = function_name(st.instance);
        char func[2048], line[2048];
        for (int frame = 0; fgets(func, sizeof(func), f) && fgets(line, sizeof(line), f); frame++) {
            func[strcspn(func, "\n")] = line[strcspn(line, " \n")] = '\0';
            const std::string here = short_path(line) + " (" + function_name(func) + ")";
            if (frame == 0) first = here;
            if (function_name(func) == name && frame > 0 && kernel.empty() &&
                first.find("(" + name + ")") == std::string::npos) {
                kernel = ", inlined at " + here;
            }
        }
        pclose(f);
    }
    if (first.empty() || first[0] == '?') {
        char hex[64];
        snprintf(hex, sizeof(hex), "code offset 0x%x (no line information)", pc - 1);
        return hex;
    }
    return first + kernel;
}

std::string thread_name(int tid) {
    char s[64];
    const unsigned bx = st.block_x, by = st.block_y;
    snprintf(s, sizeof(s), "thread (%u,%u,%u)", tid % bx, (tid / bx) % by, tid / (bx * by));
    return s;
}

std::string block_name(uint32_t block) {
    if ((block & ~B_ATOMIC) == B_MANY) return "several blocks";
    const unsigned b = (block & ~B_ATOMIC) - 1, gx = st.grid_x, gy = st.grid_y;
    char s[64];
    snprintf(s, sizeof(s), "block (%u,%u,%u)", b % gx, (b / gx) % gy, b / (gx * gy));
    return s;
}

std::string memory_name(uintptr_t a, const Region *r) {
    char s[512];
    if (r != nullptr) {
        const bool dynamic = st.dynamic_region >= 0 && r == &st.region[st.dynamic_region];
        snprintf(s, sizeof(s), "%sshared memory '%s' (byte %zu of %zu, at %p)",
                 dynamic ? "dynamic " : "", r->name, (size_t)(a - r->lo), r->bytes, (void *)a);
    } else {
        uintptr_t start = 0;
        size_t bytes = 0;
        device_allocation(a, &start, &bytes);
        snprintf(s, sizeof(s), "global memory at %p (byte %zu of a %zu-byte cudaMalloc at %p)",
                 (void *)a, (size_t)(a - start), bytes, (void *)start);
    }
    return s;
}

[[noreturn]] void report(const Cell &c, Conflict conflict, bool between_blocks, uintptr_t a,
                         size_t n, Access kind, uint32_t pc, const Region *r) {
    const char *mine = kind == READ ? "read" : kind == WRITE ? "write" : "atomic";
    std::string other;
    uint32_t other_pc;
    int other_tid;
    if (conflict == AFTER_WRITE) {
        const bool atomic = between_blocks ? (c.w_block & B_ATOMIC) : (c.w_tid & T_ATOMIC);
        other_tid = c.w_tid & T_TID;
        other = std::string(atomic ? "the atomic" : "the write") + " of " + thread_name(other_tid);
        if (between_blocks && (c.w_block & ~B_ATOMIC) == B_MANY) {
            other = "the atomics of several blocks (the last: " + thread_name(other_tid) + "'s)";
        } else if (between_blocks) {
            other += " of " + block_name(c.w_block);
        }
        if (!between_blocks && (c.w_tid & T_MANY)) other += " (the last of several threads')";
        other_pc = c.w_pc;
    } else {
        other_tid = c.r_tid & T_TID;
        other_pc = c.r_pc;
        if (!between_blocks && (c.r_tid & T_MIXED) && (other_tid >> 5) == st.tid >> 5) {
            other_tid = c.r_epoch; // the reader in the other warp
            other_pc = 0;
        }
        other = "the read of " + thread_name(other_tid);
        if (between_blocks) {
            other += c.r_block == B_MANY ? " (several blocks read it)"
                                         : " of " + block_name(c.r_block);
        } else if (other_tid == st.tid) {
            other = "a read by another thread of this warp";
            other_pc = 0;
        } else if (c.r_tid & (T_MANY | T_MIXED)) {
            other += " (and others)";
        }
    }
    const char *why = between_blocks ? "blocks of one launch may run at the same time"
                      : (other_tid >> 5) == (st.tid >> 5)
                          ? "no __syncthreads, __syncwarp or warp collective between them"
                          : "no __syncthreads between them";
    device_abort("race (%s after %s) on %s: this thread's %zu-byte %s at %s follows %s at %s: %s",
                 mine, conflict == AFTER_WRITE ? "write" : "read", memory_name(a, r).c_str(), n,
                 mine, source_of(pc).c_str(), other.c_str(), source_of(other_pc).c_str(), why);
}

void check(Cell *cells, uintptr_t base, uintptr_t a, size_t n, Access kind, const void *pc,
           bool global, const Region *r) {
    const size_t first = (a - base) / GRANULE, last = (a + n - 1 - base) / GRANULE;
    const uint32_t code = (uint32_t)((uintptr_t)pc - st.code_bias);
    const int t = st.tid;
    const uint16_t e = st.epoch[t >> 5];
    for (size_t i = first; i <= last; i++) {
        Cell &c = cells[i];
        Conflict k = global ? block_conflict(c, kind) : NONE;
        if (k != NONE) report(c, k, true, a, n, kind, code, r);
        k = thread_conflict(c, kind, t, e);
        if (k != NONE) report(c, k, false, a, n, kind, code, r);
        if (global) block_record(c, kind);
        thread_record(c, kind, t, e, code);
    }
}

} // namespace

namespace {

// an access to [a, a + n) of a shared region's granules from `first`, where a
// cp.async is pending (the running thread's own included: its wait lands it)
void pending_check(const Region &r, uintptr_t a, size_t n, Access kind, const void *pc) {
    const size_t first = (a - r.lo) / GRANULE, last = (a + n - 1 - r.lo) / GRANULE;
    for (size_t i = first; i <= last; i++) {
        const uint16_t issuer = st.pending_tid[r.cell + i];
        if (issuer == 0) continue;
        const char *mine = kind == READ ? "read" : kind == WRITE ? "write" : "atomic";
        const uint32_t code = (uint32_t)((uintptr_t)pc - st.code_bias);
        device_abort("race (%s of a pending cp.async destination) on %s: this thread's %zu-byte "
                     "%s at %s meets the cp.async of %s at %s, which lands only at that thread's "
                     "cp.async.wait_group or wait_all covering it (and is seen by others after a "
                     "__syncthreads that follows)",
                     mine, memory_name(r.lo + i * GRANULE, &r).c_str(), n, mine,
                     source_of(code).c_str(), thread_name(issuer - 1).c_str(),
                     source_of(st.pending_pc[r.cell + i]).c_str());
    }
}

// a write to [a, a + n) of device memory while a pending cp.async reads it
void source_check(uintptr_t a, size_t n, Access kind, const void *pc) {
    for (const AsyncSource &s : async_sources) {
        if (a < s.lo + s.bytes && s.lo < a + n) {
            const uint32_t code = (uint32_t)((uintptr_t)pc - st.code_bias);
            device_abort("race (%s of a pending cp.async source) on %s: this thread's %zu-byte "
                         "%s at %s overwrites what the cp.async of %s at %s may still read (until "
                         "that thread's wait covering it)",
                         kind == WRITE ? "write" : "atomic", memory_name(a, nullptr).c_str(), n,
                         kind == WRITE ? "write" : "atomic", source_of(code).c_str(),
                         thread_name(s.tid).c_str(), source_of(s.pc).c_str());
        }
    }
}

const Region *shared_region(uintptr_t a) {
    for (int i = 0; i < st.regions; i++) {
        if (a - st.region[i].lo < st.region[i].bytes) return &st.region[i];
    }
    return nullptr;
}

// an access's rules and records without its traffic (a landing cp.async)
void record(const void *p, size_t n, Access kind, const void *pc) {
    const uintptr_t a = (uintptr_t)p;
    if (n == 0 || !st.check) return;
    if (a - global_lo < global_bytes) {
        if (st.check_global) {
            const size_t within = global_lo + global_bytes - a;
            check(global_cells, global_lo, a, n < within ? n : within, kind, pc, true, nullptr);
        }
        return;
    }
    if (const Region *r = shared_region(a)) {
        const size_t within = r->lo + r->bytes - a;
        check(st.shared_cells + r->cell, r->lo, a, n < within ? n : within, kind, pc, false, r);
    }
}

} // namespace

bool static_shared(const void *p, size_t n) {
    const Region *r = shared_region((uintptr_t)p);
    return r != nullptr && (uintptr_t)p + n <= r->lo + r->bytes;
}

void async_issued(void *dst, const void *src, size_t n, size_t src_n, const void *pc) {
    access(src, src_n, READ, pc); // the copy may read and write at once
    access(dst, n, WRITE, pc);
    if (!st.check) return;
    const Region *r = shared_region((uintptr_t)dst);
    if (r == nullptr) return;
    const uint32_t code = (uint32_t)((uintptr_t)pc - st.code_bias);
    const size_t first = ((uintptr_t)dst - r->lo) / GRANULE, last = ((uintptr_t)dst + n - 1 - r->lo) / GRANULE;
    for (size_t i = first; i <= last; i++) {
        st.pending_tid[r->cell + i] = (uint16_t)(st.tid + 1);
        st.pending_pc[r->cell + i] = code;
    }
    if (src_n > 0) async_sources.push_back(AsyncSource{(uintptr_t)src, src_n, dst, st.tid, code});
    st.async_pending++;
}

void async_landed(void *dst, const void *src, size_t n, size_t src_n, const void *pc) {
    if (!st.check) return;
    const Region *r = shared_region((uintptr_t)dst);
    if (r == nullptr) return;
    const size_t first = ((uintptr_t)dst - r->lo) / GRANULE, last = ((uintptr_t)dst + n - 1 - r->lo) / GRANULE;
    for (size_t i = first; i <= last; i++) st.pending_tid[r->cell + i] = 0;
    for (size_t i = 0; i < async_sources.size(); i++) {
        if (async_sources[i].dst == dst && async_sources[i].tid == st.tid) {
            async_sources[i] = async_sources.back();
            async_sources.pop_back();
            break;
        }
    }
    st.async_pending--;
    record(src, src_n, READ, pc); // where it lands: its thread's view from here on
    record(dst, n, WRITE, pc);
}

void access(const void *p, size_t n, Access kind, const void *pc) {
    const uintptr_t a = (uintptr_t)p;
    if (n == 0) return;
    if (a - global_lo < global_bytes) {
        if (kind != WRITE) st.read_bytes += n;
        if (kind != READ) st.written_bytes += n;
        const size_t within = global_lo + global_bytes - a;
        if (st.async_pending > 0 && kind != READ && st.check) source_check(a, n, kind, pc);
        if (st.check_global) {
            check(global_cells, global_lo, a, n < within ? n : within, kind, pc, true, nullptr);
            if (kind != READ) {
                const size_t m = n < within ? n : within;
                for (size_t i = (a - global_lo) / GRANULE; i <= (a + m - 1 - global_lo) / GRANULE; i++) {
                    legacy_writers[i] = legacy_stamp;
                }
            }
        }
        return;
    }
    for (int i = 0; i < st.regions; i++) {
        const Region &r = st.region[i];
        if (a - r.lo < r.bytes) {
            if (kind != WRITE) st.shared_read_bytes += n;
            if (kind != READ) st.shared_written_bytes += n;
            const size_t within = r.lo + r.bytes - a; // an overrun is ASan's to see (SAN=1)
            if (st.check) {
                if (st.async_pending > 0) pending_check(r, a, n < within ? n : within, kind, pc);
                check(st.shared_cells + r.cell, r.lo, a, n < within ? n : within, kind, pc, false, &r);
            }
            return;
        }
    }
    // the fiber's stack, the emulator's shuffle slots, host memory: not device memory
}

namespace {

// EMU_KERNEL_LOG: the kernels launched, checked or not (shared by the ranks as threads)
std::mutex kernel_log_mutex;
// checked: race-checked with two or more warps a block; one_warp: with one;
// multi_warp: launched (checked or not) with two or more
std::set<std::string> kernels_checked, kernels_one_warp, kernels_unchecked, kernels_multi_warp;

void write_kernel_log() {
    const char *path = getenv("EMU_KERNEL_LOG");
    FILE *f = fopen(path, "a");
    if (f == nullptr) {
        fprintf(stderr, "emulated CUDA: EMU_KERNEL_LOG=%s: cannot append\n", path);
        return;
    }
    std::lock_guard<std::mutex> lock(kernel_log_mutex);
    for (const std::string &k : kernels_checked) fprintf(f, "checked %s\n", k.c_str());
    for (const std::string &k : kernels_one_warp) {
        if (kernels_checked.count(k) == 0) fprintf(f, "one-warp %s\n", k.c_str());
    }
    for (const std::string &k : kernels_unchecked) {
        if (kernels_checked.count(k) == 0 && kernels_one_warp.count(k) == 0) {
            fprintf(f, "unchecked %s\n", k.c_str());
        }
    }
    for (const std::string &k : kernels_multi_warp) fprintf(f, "multi-warp %s\n", k.c_str());
    fclose(f);
}

void note_kernel(const char *kernel, bool checked, bool warps) {
    static const bool requested = [] {
        const char *v = getenv("EMU_KERNEL_LOG");
        if (v == nullptr || v[0] == '\0') return false;
        atexit(write_kernel_log);
        return true;
    }();
    if (!requested) return;
    std::lock_guard<std::mutex> lock(kernel_log_mutex);
    (!checked ? kernels_unchecked : warps ? kernels_checked : kernels_one_warp).insert(kernel);
    if (warps) kernels_multi_warp.insert(kernel);
}

} // namespace

void launch_begins(const char *kernel, const char *instance, dim3 grid, dim3 block,
                   void *dynamic_shared, size_t bytes) {
    const Mode m = mode();
    st.code_bias = program_bias();
    st.kernel = kernel;
    st.instance = instance;
    st.grid_x = grid.x;
    st.grid_y = grid.y;
    st.block_x = block.x;
    st.block_y = block.y;
    st.check = m != OFF;
    st.check_global = m == ALL && global_cells != nullptr;
    note_kernel(instance, st.check, (unsigned long long)block.x * block.y * block.z > 32);
    const bool traffic = traffic_requested(); // (its first call arranges the table at exit)
    st.on = st.check || traffic;
    st.launch = launches.fetch_add(1, std::memory_order_relaxed) + 1;
    st.regions = 0;
    st.shared_used = 0;
    st.read_bytes = st.written_bytes = st.mmas = 0;
    st.shared_read_bytes = st.shared_written_bytes = 0;
    st.dynamic_region = -1;
    if (st.on && bytes > 0) {
        st.dynamic_region = st.regions;
        add_region((uintptr_t)dynamic_shared, bytes, "extern __shared__");
    }
}

void launch_ends() {
    if (st.on) {
        traffic_add(st.kernel, st.read_bytes, st.written_bytes, st.mmas, 0, st.shared_read_bytes,
                    st.shared_written_bytes);
    }
    active = false;
}

void block_begins(unsigned linear_block) {
    st.block = linear_block % (B_MANY - 1) + 1; // below the flags (2^31 blocks would alias)
    st.sync = next_interval();
    memset(st.epoch, 0, sizeof(st.epoch));
    if (st.async_pending > 0) { // a block that aborted is the only way here; clear for safety
        memset(st.pending_tid, 0, st.shared_used * sizeof(uint16_t));
        st.async_pending = 0;
    }
    async_sources.clear();
}

void fiber_enters(int thread) {
    st.tid = thread;
    active = st.on;
}

void fiber_leaves() { active = false; }
void warp_released(int warp) { st.epoch[warp]++; }
void block_released() { st.sync = next_interval(); }

void shared_array(void *p, size_t bytes, const char *name) {
    if (!st.on) return;
    for (int i = 0; i < st.regions; i++) {
        if (st.region[i].lo == (uintptr_t)p) return; // registered by an earlier block
    }
    add_region((uintptr_t)p, bytes, name);
}

void mma_issued() { st.mmas++; }

void dynamic_shared_named(const char *name) {
    if (st.dynamic_region >= 0) st.region[st.dynamic_region].name = name;
}

void global_memory_reserved(uintptr_t lo, size_t bytes) {
    if (mode() == ALL) {
        const size_t shadow = bytes / GRANULE * sizeof(Cell);
        void *m = mmap(nullptr, shadow, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        void *w = mmap(nullptr, bytes / GRANULE * sizeof(uint32_t), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m != MAP_FAILED && w != MAP_FAILED) {
            global_cells = (Cell *)m;
            legacy_writers = (uint32_t *)w;
        } else {
            fprintf(stderr, "emulated CUDA: no address space for the race detector's shadow of "
                            "device memory (%zu GB): global memory unchecked\n", shadow >> 30);
        }
    }
    global_lo = lo; // the traffic counts need only the range
    global_bytes = bytes;
}

void global_memory_freed(uintptr_t p, size_t bytes) {
    if (global_cells == nullptr || bytes == 0) return;
    // the shadow pages inside the allocation's shadow go back to the system
    const uintptr_t page = 4096;
    const uintptr_t lo = (uintptr_t)(global_cells + (p - global_lo) / GRANULE);
    const uintptr_t hi = (uintptr_t)(global_cells + (p + bytes - global_lo) / GRANULE);
    const uintptr_t a = (lo + page - 1) & ~(page - 1), b = hi & ~(page - 1);
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
    const uintptr_t wlo = (uintptr_t)(legacy_writers + (p - global_lo) / GRANULE);
    const uintptr_t whi = (uintptr_t)(legacy_writers + (p + bytes - global_lo) / GRANULE);
    const uintptr_t wa = (wlo + page - 1) & ~(page - 1), wb = whi & ~(page - 1);
    if (wb > wa) madvise((void *)wa, wb - wa, MADV_DONTNEED);
}

void legacy_op_begins(unsigned long long pos, const char *what) {
    legacy_stamp = (uint32_t)pos;
    legacy_names[pos % NAMES] = what;
}

// the granules of [p, p + bytes) in device memory with a shadow, else false
static bool legacy_range(const void *p, size_t bytes, size_t *first, size_t *last) {
    const uintptr_t a = (uintptr_t)p;
    if (legacy_writers == nullptr || bytes == 0 || a - global_lo >= global_bytes ||
        bytes > global_lo + global_bytes - a) {
        return false;
    }
    *first = (a - global_lo) / GRANULE;
    *last = (a + bytes - 1 - global_lo) / GRANULE;
    return true;
}

void legacy_wrote(const void *p, size_t bytes) {
    size_t first, last;
    if (!legacy_range(p, bytes, &first, &last)) return;
    for (size_t i = first; i <= last; i++) legacy_writers[i] = legacy_stamp;
}

void stream_order_check(const void *p, size_t bytes, const char *what) {
    size_t first, last;
    if (!legacy_range(p, bytes, &first, &last)) return;
    const unsigned long long bound = stream_order_bound();
    for (size_t i = first; i <= last; i++) {
        const uint32_t w = legacy_writers[i];
        if (w > bound) {
            const char *name = legacy_names[w % NAMES];
            device_abort("stream race on %s: %s, queued on a created stream, touches what "
                         "stream-0 operation %u (%s) wrote, and no cudaStreamWaitEvent (or host "
                         "wait) orders it after that operation: its waits reach stream-0 "
                         "operation %llu only",
                         memory_name(global_lo + i * GRANULE, nullptr).c_str(), what, w,
                         name != nullptr ? name : "?", bound);
        }
    }
}

} // namespace race

bool race_checking() { return race::mode() != race::OFF; }

void atomic_access(void *p, size_t bytes, const void *pc) {
    if (race::active) race::access(p, bytes, race::ATOMIC, pc);
}

} // namespace emu
