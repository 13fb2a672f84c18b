// CUDA emulation (a logic check, not a device run): copies queued between
// the device and page-locked host memory (cudaMallocHost). On a device such a
// copy runs later, in stream order, so the host may touch its host side only
// after a wait that covers it: cudaEventSynchronize of an event recorded after
// it on its stream (an event on the legacy stream 0 covers every stream's),
// cudaStreamSynchronize of its stream (0: all), cudaDeviceSynchronize, a
// synchronous cudaMemcpy or cudaFreeHost. The emulator copies when the
// stream runs the copy (emu_streams.cpp: stream 0 at once) and makes early
// access visible: a copy out of page-locked memory keeps a hash
// of the bytes it read, checked when a wait retires it (different: the host
// rewrote them too early, and the device could have copied the new ones:
// abort); a copy into page-locked memory leaves 0xFF bytes (NaN) there and
// lands at the wait, so whatever the host reads before it is NaN.
#include <string.h>

#include <vector>

#include "emu_internal.h"
#include "emu_kernel.h"

namespace emu {
namespace {

struct PinnedCopy {
    void *host;                 // the page-locked side
    size_t bytes;
    bool from_host;             // host -> device: the source's hash; else the landing bytes
    uint64_t hash;
    std::vector<unsigned char> landing;
    cudaStream_t stream;
    unsigned long long seq;
};

thread_local std::vector<PinnedCopy> in_flight; // this thread's (a rank's) streams
thread_local unsigned long long queued = 0;

uint64_t fnv1a(const void *p, size_t bytes) {
    const unsigned char *b = (const unsigned char *)p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < bytes; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

} // namespace

unsigned long long pinned_copy_queued(void *host, size_t bytes, bool from_host,
                                      cudaStream_t stream) {
    PinnedCopy c;
    c.host = host;
    c.bytes = bytes;
    c.from_host = from_host;
    c.hash = from_host ? fnv1a(host, bytes) : 0;
    if (!from_host) { // what the device copy wrote lands at the wait
        c.landing.assign((unsigned char *)host, (unsigned char *)host + bytes);
        memset(host, 0xff, bytes);
    }
    c.stream = stream;
    c.seq = ++queued;
    in_flight.push_back(std::move(c));
    return queued;
}

void pinned_copy_ran(unsigned long long seq) {
    for (PinnedCopy &c : in_flight) {
        if (c.seq != seq || c.from_host) continue;
        c.landing.assign((unsigned char *)c.host, (unsigned char *)c.host + c.bytes);
        memset(c.host, 0xff, c.bytes); // NaN again until the wait
    }
}

unsigned long long pinned_copies_queued() { return queued; }

void pinned_wait(cudaStream_t stream, bool every_stream, unsigned long long upto, const char *by) {
    size_t kept = 0;
    for (size_t i = 0; i < in_flight.size(); i++) {
        PinnedCopy &c = in_flight[i];
        if (c.seq > upto || (!every_stream && c.stream != stream)) {
            if (kept != i) in_flight[kept] = std::move(c);
            kept++;
            continue;
        }
        if (c.from_host && fnv1a(c.host, c.bytes) != c.hash) {
            device_abort("page-locked host memory at %p (%zu bytes) was rewritten while a "
                         "cudaMemcpyAsync from it could still be running: the host wrote it "
                         "before %s waited for the copy",
                         c.host, c.bytes, by);
        }
        if (!c.from_host) memcpy(c.host, c.landing.data(), c.bytes);
    }
    in_flight.resize(kept);
}

} // namespace emu
