// CUDA emulation (a logic check, not a device run): memory, devices,
// streams and events. cudaMalloc hands out 0xFF-filled host memory (NaN as
// fp32 and bf16) and records its size, so copies, memsets and the library
// calls can check every range against the allocation it must lie in.
// Stream 0 runs its work at once; a created stream's copies, memsets and
// collectives wait in its queue until something forces them (emu_streams.cpp);
// copies to and from page-locked memory are held to the waits a device needs
// (emu_pinned.cpp).
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <climits>
#include <map>
#include <mutex>
#include <set>

#include "cuda_runtime.h"
#include "emu_internal.h"
#include "emu_race.h"

struct emu_event {
    double seconds;
    int recorded;
    emu::StreamMark at;      // where it was last recorded (emu_streams.cpp)
    unsigned long long mark; // the page-locked copies queued by then (emu_pinned.cpp)
};

namespace emu {
namespace {

const int DEVICE_COUNT = 8; // ranks as threads pick devices rank % count
const size_t DEVICE_BYTES = (size_t)141 << 30;

std::mutex memory_mutex;
std::map<uintptr_t, size_t> device_allocations; // start -> bytes
std::map<uintptr_t, size_t> host_allocations; // cudaMallocHost: start -> bytes
std::map<const void *, size_t> func_shared_limits;
std::set<cudaStream_t> streams;
std::set<cudaEvent_t> events;
thread_local int current_device = 0;
thread_local unsigned long long launches = 0;

double now_seconds() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// [start, bytes] of the allocation containing p, or bytes 0 (lock held)
std::pair<uintptr_t, size_t> find_allocation(const void *p) {
    uintptr_t a = (uintptr_t)p;
    auto it = device_allocations.upper_bound(a);
    if (it == device_allocations.begin()) return {0, 0};
    --it;
    if (a >= it->first && a < it->first + (it->second > 0 ? it->second : 1)) return *it;
    return {0, 0};
}

bool is_device(const void *p) {
    std::lock_guard<std::mutex> lock(memory_mutex);
    return find_allocation(p).second > 0;
}

// whether [p, p + bytes) lies in one cudaMallocHost allocation
bool is_pinned(const void *p, size_t bytes) {
    std::lock_guard<std::mutex> lock(memory_mutex);
    const uintptr_t a = (uintptr_t)p;
    auto it = host_allocations.upper_bound(a);
    if (it == host_allocations.begin()) return false;
    --it;
    return a >= it->first && a - it->first + bytes <= it->second;
}

} // namespace

void check_device_range(const void *p, size_t bytes, const char *what) {
    if (p == nullptr) device_abort("%s: NULL device pointer", what);
    std::lock_guard<std::mutex> lock(memory_mutex);
    auto a = find_allocation(p);
    if (a.second == 0) device_abort("%s: %p is not device memory (no cudaMalloc holds it)", what, p);
    const size_t offset = (uintptr_t)p - a.first;
    if (bytes > a.second - offset) {
        device_abort("%s: %zu bytes at offset %zu overrun the allocation of %zu bytes", what, bytes,
                     offset, a.second);
    }
}

size_t device_bytes_after(const void *p) {
    std::lock_guard<std::mutex> lock(memory_mutex);
    auto a = find_allocation(p);
    return a.second == 0 ? 0 : a.second - ((uintptr_t)p - a.first);
}

int sm_count() {
    const char *v = getenv("EMU_SMS");
    int n = v != nullptr ? atoi(v) : 4;
    return n > 0 ? n : 4;
}

size_t func_max_dynamic_shared(const void *kernel, size_t fallback) {
    std::lock_guard<std::mutex> lock(memory_mutex);
    auto it = func_shared_limits.find(kernel);
    return it == func_shared_limits.end() ? fallback : it->second;
}

void check_stream(cudaStream_t s, const char *what) {
    if (s == nullptr) return;
    std::lock_guard<std::mutex> lock(memory_mutex);
    if (streams.count(s) == 0) device_abort("%s: stream %p was never created or is destroyed", what, (void *)s);
}

void count_launch() { launches++; }

void device_allocation(uintptr_t a, uintptr_t *start, size_t *bytes) {
    std::lock_guard<std::mutex> lock(memory_mutex);
    auto it = find_allocation((const void *)a);
    *start = it.first;
    *bytes = it.second;
}

unsigned pointer_alignment(const void *p) {
    uintptr_t a = (uintptr_t)p;
    unsigned align = 256;
    while (align > 1 && a % align != 0) align >>= 1;
    return align;
}

} // namespace emu

using emu::device_abort;

// a recorded operation issued again at a graph's launch: it cannot fail but by a bug here
#define CUDA_EMU_ISSUE(call, what)                                                         \
    do {                                                                                   \
        if ((call) != cudaSuccess) device_abort("cudaGraphLaunch: the recorded %s failed", what); \
    } while (0)

// refused during a capture on this thread (emu_graph.cpp), naming the call
#define EMU_CAPTURE_REFUSES(call, s, unsafe)                                     \
    do {                                                                         \
        const cudaError_t refused_ = emu::capture_refuses(call, s, unsafe);      \
        if (refused_ != cudaSuccess) return refused_;                            \
    } while (0)

cudaError_t cudaMalloc(void **p, size_t bytes) {
    if (p == nullptr) return cudaErrorInvalidValue;
    EMU_CAPTURE_REFUSES("cudaMalloc", nullptr, true);
    // 256-byte aligned as cudaMalloc; the race detector's arena where it is built,
    // else the heap with the exact size, so ASan sees overruns
    void *m = emu::arena_alloc(bytes > 0 ? bytes : 1);
    if (m == nullptr && posix_memalign(&m, 256, bytes > 0 ? bytes : 1) != 0) return cudaErrorMemoryAllocation;
    memset(m, 0xff, bytes > 0 ? bytes : 1);
    std::lock_guard<std::mutex> lock(emu::memory_mutex);
    emu::device_allocations[(uintptr_t)m] = bytes;
    *p = m;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p) {
    if (p == nullptr) return cudaSuccess;
    EMU_CAPTURE_REFUSES("cudaFree", nullptr, true);
    emu::streams_synchronize_all(); // it waits for the device
    emu::pinned_wait(nullptr, true, ULLONG_MAX, "cudaFree");
    size_t bytes;
    {
        std::lock_guard<std::mutex> lock(emu::memory_mutex);
        auto it = emu::device_allocations.find((uintptr_t)p);
        if (it == emu::device_allocations.end()) {
            device_abort("cudaFree(%p): not a live cudaMalloc allocation (double free?)", p);
        }
        bytes = it->second;
        emu::device_allocations.erase(it);
    }
    if (!emu::arena_free(p, bytes)) free(p);
    return cudaSuccess;
}

cudaError_t cudaMallocHost(void **p, size_t bytes) {
    EMU_CAPTURE_REFUSES("cudaMallocHost", nullptr, true);
    *p = malloc(bytes > 0 ? bytes : 1);
    if (*p == nullptr) return cudaErrorMemoryAllocation;
    std::lock_guard<std::mutex> lock(emu::memory_mutex);
    emu::host_allocations[(uintptr_t)*p] = bytes;
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p) {
    if (p == nullptr) return cudaSuccess;
    EMU_CAPTURE_REFUSES("cudaFreeHost", nullptr, true);
    emu::streams_synchronize_all(); // it waits for the device
    emu::pinned_wait(nullptr, true, ULLONG_MAX, "cudaFreeHost");
    {
        std::lock_guard<std::mutex> lock(emu::memory_mutex);
        if (emu::host_allocations.erase((uintptr_t)p) == 0) {
            device_abort("cudaFreeHost(%p): not a cudaMallocHost allocation", p);
        }
    }
    free(p);
    return cudaSuccess;
}

// the checks of cudaMemcpy and cudaMemcpyAsync
static void copy_check(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
    const bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    const bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (kind == cudaMemcpyDefault) {
        if (emu::is_device(dst)) emu::check_device_range(dst, bytes, "cudaMemcpy destination");
        if (emu::is_device(src)) emu::check_device_range(src, bytes, "cudaMemcpy source");
    } else {
        if (dst_dev) emu::check_device_range(dst, bytes, "cudaMemcpy destination");
        else if (emu::is_device(dst)) device_abort("cudaMemcpy: destination %p is device memory but the kind says host", dst);
        if (src_dev) emu::check_device_range(src, bytes, "cudaMemcpy source");
        else if (emu::is_device(src)) device_abort("cudaMemcpy: source %p is device memory but the kind says host", src);
    }
}

// on the legacy stream: after everything queued before it
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
    if (bytes == 0) return cudaSuccess;
    EMU_CAPTURE_REFUSES("cudaMemcpy (synchronous)", nullptr, true);
    EMU_CAPTURE_REFUSES("cudaMemcpy (synchronous)", nullptr, false);
    copy_check(dst, src, bytes, kind);
    emu::stream_op_now(nullptr, "cudaMemcpy");
    emu::pinned_wait(nullptr, true, ULLONG_MAX, "a synchronous cudaMemcpy");
    memmove(dst, src, bytes);
    emu::race::legacy_wrote(dst, bytes);
    emu::stream_synchronize(nullptr); // the host waits for it
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
    emu::check_stream(stream, "cudaMemcpyAsync");
    if (bytes == 0) return cudaSuccess;
    copy_check(dst, src, bytes, kind);
    if (emu::stream_capturing(stream)) { // recorded: the graph's launch queues the copy
        const bool host_src = !emu::is_device(src), host_dst = !emu::is_device(dst);
        if ((host_src && !emu::is_pinned(src, bytes)) || (host_dst && !emu::is_pinned(dst, bytes))) {
            return emu::capture_invalidate(stream, cudaErrorStreamCaptureUnsupported, "cudaMemcpyAsync",
                                           "pageable host memory: a captured copy needs page-locked or device memory");
        }
        emu::capture_record(stream, "cudaMemcpyAsync", [=](cudaStream_t s) {
            CUDA_EMU_ISSUE(cudaMemcpyAsync(dst, src, bytes, kind, s), "cudaMemcpyAsync");
        });
        return cudaSuccess;
    }
    if (stream == nullptr) EMU_CAPTURE_REFUSES("cudaMemcpyAsync", nullptr, false);
    if (stream != nullptr) { // queued: the copy happens when the stream runs it
        unsigned long long landing = 0; // a copy into page-locked memory: its number
        if (!emu::is_device(src) && emu::is_pinned(src, bytes)) {
            emu::pinned_copy_queued((void *)src, bytes, true, stream);
        } else if (!emu::is_device(dst) && emu::is_pinned(dst, bytes)) {
            landing = emu::pinned_copy_queued(dst, bytes, false, stream);
        }
        emu::stream_submit(stream, "cudaMemcpyAsync", [=] {
            emu::race::stream_order_check(src, bytes, "cudaMemcpyAsync (its source)");
            emu::race::stream_order_check(dst, bytes, "cudaMemcpyAsync (its destination)");
            memmove(dst, src, bytes);
            if (landing != 0) emu::pinned_copy_ran(landing);
        });
        return cudaSuccess;
    }
    emu::stream_op_now(nullptr, "cudaMemcpyAsync");
    memmove(dst, src, bytes);
    emu::race::legacy_wrote(dst, bytes);
    if (!emu::is_device(src) && emu::is_pinned(src, bytes)) {
        emu::pinned_copy_queued((void *)src, bytes, true, stream);
    } else if (!emu::is_device(dst) && emu::is_pinned(dst, bytes)) {
        emu::pinned_copy_queued(dst, bytes, false, stream);
    }
    return cudaSuccess;
}

cudaError_t cudaMemset(void *p, int value, size_t bytes) { return cudaMemsetAsync(p, value, bytes, 0); }

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t stream) {
    emu::check_stream(stream, "cudaMemsetAsync");
    if (bytes == 0) return cudaSuccess;
    emu::check_device_range(p, bytes, "cudaMemset");
    if (emu::stream_capturing(stream)) {
        emu::capture_record(stream, "cudaMemsetAsync", [=](cudaStream_t s) {
            CUDA_EMU_ISSUE(cudaMemsetAsync(p, value, bytes, s), "cudaMemsetAsync");
        });
        return cudaSuccess;
    }
    if (stream == nullptr) EMU_CAPTURE_REFUSES("cudaMemset", nullptr, false);
    emu::stream_submit(stream, "cudaMemsetAsync", [=] {
        if (emu::stream_op_queued()) emu::race::stream_order_check(p, bytes, "cudaMemsetAsync");
        memset(p, value, bytes);
        emu::race::legacy_wrote(p, bytes);
    });
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
    *free_bytes = emu::DEVICE_BYTES;
    *total_bytes = emu::DEVICE_BYTES;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int *count) {
    static std::once_flag said;
    std::call_once(said, [] { fprintf(stderr, "emulated CUDA: a logic check, not a device run\n"); });
    *count = emu::DEVICE_COUNT;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
    if (device < 0 || device >= emu::DEVICE_COUNT) return cudaErrorInvalidDevice;
    emu::current_device = device;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device) {
    *device = emu::current_device;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device) {
    if (device < 0 || device >= emu::DEVICE_COUNT) return cudaErrorInvalidDevice;
    memset(prop, 0, sizeof(*prop));
    snprintf(prop->name, sizeof(prop->name), "emulated CUDA device (a logic check, not a device run)");
    prop->totalGlobalMem = emu::DEVICE_BYTES;
    prop->sharedMemPerBlock = 48 << 10;
    prop->sharedMemPerBlockOptin = 227 << 10;
    prop->sharedMemPerMultiprocessor = 228 << 10;
    prop->regsPerBlock = 65536;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
    prop->maxThreadsDim[2] = 64;
    prop->maxGridSize[0] = 2147483647;
    prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
    prop->maxThreadsPerMultiProcessor = 2048;
    prop->multiProcessorCount = emu::sm_count();
    prop->major = 9;
    prop->minor = 0;
    prop->l2CacheSize = 50 << 20;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device) {
    cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, device);
    if (e != cudaSuccess) return e;
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
    case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = (int)p.sharedMemPerBlockOptin; break;
    default: return cudaErrorInvalidValue;
    }
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
    EMU_CAPTURE_REFUSES("cudaDeviceSynchronize", nullptr, true);
    EMU_CAPTURE_REFUSES("cudaDeviceSynchronize", nullptr, false);
    emu::streams_synchronize_all();
    emu::pinned_wait(nullptr, true, ULLONG_MAX, "cudaDeviceSynchronize");
    return cudaSuccess;
}
cudaError_t cudaDeviceReset(void) { return cudaSuccess; }
// launch errors abort at the launch (emu_fibers.cpp), so none is ever pending
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaPeekAtLastError(void) { return cudaSuccess; }

const char *cudaGetErrorString(cudaError_t err) {
    switch (err) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureIsolation: return "dependency created on uncaptured work in another stream";
    case cudaErrorStreamCaptureImplicit: return "operation would make the legacy stream depend on a capturing blocking stream";
    default: return "unknown error";
    }
}

const char *cudaGetErrorName(cudaError_t err) {
    switch (err) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureIsolation: return "cudaErrorStreamCaptureIsolation";
    case cudaErrorStreamCaptureImplicit: return "cudaErrorStreamCaptureImplicit";
    default: return "cudaErrorUnknown";
    }
}

cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, 0); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
    *s = new emu_stream{(flags & cudaStreamNonBlocking) == 0};
    {
        std::lock_guard<std::mutex> lock(emu::memory_mutex);
        emu::streams.insert(*s);
    }
    emu::stream_created(*s);
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
    emu::check_stream(s, "cudaStreamDestroy");
    EMU_CAPTURE_REFUSES("cudaStreamDestroy", s, false);
    emu::stream_destroyed(s);
    {
        std::lock_guard<std::mutex> lock(emu::memory_mutex);
        if (emu::streams.erase(s) == 0) device_abort("cudaStreamDestroy(%p): no such stream", (void *)s);
    }
    delete s;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    emu::check_stream(s, "cudaStreamSynchronize");
    EMU_CAPTURE_REFUSES("cudaStreamSynchronize", s, false);
    emu::stream_synchronize(s);
    emu::pinned_wait(s, s == nullptr, ULLONG_MAX, "cudaStreamSynchronize");
    return cudaSuccess;
}

static void check_event(cudaEvent_t e, const char *what) {
    std::lock_guard<std::mutex> lock(emu::memory_mutex);
    if (emu::events.count(e) == 0) device_abort("%s: event %p was never created or is destroyed", what, (void *)e);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags) {
    (void)flags;
    emu::check_stream(s, "cudaStreamWaitEvent");
    check_event(e, "cudaStreamWaitEvent");
    if (emu::stream_capturing(s)) {
        fprintf(stderr, "emulated CUDA: cudaStreamWaitEvent into a capturing stream: captures over "
                "several streams are not emulated\n");
        return cudaErrorStreamCaptureIsolation;
    }
    if (s == nullptr) EMU_CAPTURE_REFUSES("cudaStreamWaitEvent", nullptr, false);
    if (e->recorded) emu::stream_wait(s, e->at); // a never-recorded event: nothing to wait for
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, 0); }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) {
    (void)flags;
    *e = new emu_event{0.0, 0, emu::StreamMark{nullptr, 0, 0}, 0};
    std::lock_guard<std::mutex> lock(emu::memory_mutex);
    emu::events.insert(*e);
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
    {
        std::lock_guard<std::mutex> lock(emu::memory_mutex);
        if (emu::events.erase(e) == 0) device_abort("cudaEventDestroy(%p): no such event", (void *)e);
    }
    delete e;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    check_event(e, "cudaEventRecord");
    emu::check_stream(s, "cudaEventRecord");
    if (emu::stream_capturing(s)) {
        fprintf(stderr, "emulated CUDA: cudaEventRecord on a capturing stream: captures over "
                "several streams are not emulated\n");
        return cudaErrorStreamCaptureUnsupported;
    }
    if (s == nullptr) EMU_CAPTURE_REFUSES("cudaEventRecord", nullptr, false);
    e->at = emu::stream_mark(s);
    e->seconds = emu::now_seconds();
    e->recorded = 1;
    e->mark = emu::pinned_copies_queued();
    return cudaSuccess;
}

// an event on the legacy stream 0 comes after the work queued on every stream
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    check_event(e, "cudaEventSynchronize");
    if (e->recorded && e->at.stream != nullptr) {
        EMU_CAPTURE_REFUSES("cudaEventSynchronize", e->at.stream, false);
    }
    if (e->recorded) {
        emu::stream_host_waits(e->at);
        emu::pinned_wait(e->at.stream, e->at.stream == nullptr, e->mark, "cudaEventSynchronize");
    }
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t stop) {
    check_event(start, "cudaEventElapsedTime");
    check_event(stop, "cudaEventElapsedTime");
    if (!start->recorded || !stop->recorded) device_abort("cudaEventElapsedTime: an event was never recorded");
    *ms = (float)(1e3 * (stop->seconds - start->seconds));
    return cudaSuccess;
}

cudaError_t emu_func_set_attribute(const void *kernel, cudaFuncAttribute attr, int value) {
    if (emu::stream_capturing_any()) {
        return emu::capture_refuses("cudaFuncSetAttribute (the project sets attributes once, at "
                                    "init)", nullptr, true);
    }
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaSuccess;
    if (value < 0 || value > (227 << 10)) return cudaErrorInvalidValue; // as the device: too much is refused
    std::lock_guard<std::mutex> lock(emu::memory_mutex);
    emu::func_shared_limits[kernel] = (size_t)value;
    return cudaSuccess;
}

// blocks per SM: Hopper's 2048 threads, 228 KB shared (1 KB reserved per block), 32 blocks
cudaError_t emu_occupancy(int *blocks, const void *kernel, int threads, size_t shared_bytes) {
    if (emu::stream_capturing_any()) {
        return emu::capture_refuses("cudaOccupancyMaxActiveBlocksPerMultiprocessor (the project "
                                    "asks once, at init)", nullptr, true);
    }
    if (threads <= 0 || threads > 1024) return cudaErrorInvalidValue;
    if (shared_bytes > emu::func_max_dynamic_shared(kernel, 48 << 10)) { // as the device: no fit
        *blocks = 0;
        return cudaSuccess;
    }
    int by_threads = 2048 / (((threads + 31) / 32) * 32);
    int by_shared = (int)((228u << 10) / (shared_bytes + (1u << 10)));
    int b = by_threads < by_shared ? by_threads : by_shared;
    *blocks = b < 32 ? b : 32;
    return cudaSuccess;
}
