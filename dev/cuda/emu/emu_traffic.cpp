// CUDA emulation (a logic check, not a device run): the per-kernel traffic
// table (emu_traffic.h), filled at the end of every launch by the race
// detector's hooks (global and shared bytes, and the mma count emu_mma.cpp
// keeps with them) and by the emulated cuBLAS at each call, shared by the
// ranks as threads.
#include <stdlib.h>
#include <string.h>

#include <map>
#include <mutex>
#include <string>

#include "cuda_runtime.h"
#include "emu_traffic.h"

namespace emu {
namespace {

std::mutex traffic_mutex;
std::map<std::string, KernelTraffic> traffic;

void print_at_exit() { print_traffic(stderr); }

} // namespace

bool traffic_requested() {
    static const bool requested = [] {
        const char *v = getenv("EMU_TRAFFIC");
        const bool on = v != nullptr && strcmp(v, "0") != 0 && v[0] != '\0';
        if (on) atexit(print_at_exit);
        return on;
    }();
    return requested;
}

bool traffic_counted() {
#ifdef EMU_RACE
    return race_checking() || traffic_requested();
#else
    return false;
#endif
}

void traffic_add(const char *kernel, unsigned long long bytes_read, unsigned long long bytes_written,
                 unsigned long long mma, unsigned long long gemm_flops,
                 unsigned long long shared_read, unsigned long long shared_written) {
    std::lock_guard<std::mutex> lock(traffic_mutex);
    KernelTraffic &t = traffic[kernel];
    t.launches++;
    t.bytes_read += bytes_read;
    t.bytes_written += bytes_written;
    t.mma += mma;
    t.gemm_flops += gemm_flops;
    t.shared_read += shared_read;
    t.shared_written += shared_written;
}

KernelTraffic kernel_traffic(const char *kernel) {
    std::lock_guard<std::mutex> lock(traffic_mutex);
    auto it = traffic.find(kernel);
    return it == traffic.end() ? KernelTraffic{0, 0, 0, 0, 0, 0, 0} : it->second;
}

KernelTraffic traffic_total() {
    std::lock_guard<std::mutex> lock(traffic_mutex);
    KernelTraffic sum = {0, 0, 0, 0, 0, 0, 0};
    for (const auto &k : traffic) {
        sum.launches += k.second.launches;
        sum.bytes_read += k.second.bytes_read;
        sum.bytes_written += k.second.bytes_written;
        sum.mma += k.second.mma;
        sum.gemm_flops += k.second.gemm_flops;
        sum.shared_read += k.second.shared_read;
        sum.shared_written += k.second.shared_written;
    }
    return sum;
}

void traffic_reset() {
    std::lock_guard<std::mutex> lock(traffic_mutex);
    traffic.clear();
}

void print_traffic(FILE *f) {
    if (!traffic_counted()) {
        fprintf(f, "emulated traffic: not counted (built without the access hooks: SAN=1)\n");
        return;
    }
    std::lock_guard<std::mutex> lock(traffic_mutex);
    fprintf(f, "emulated global-memory traffic (bytes the kernels' accesses touched; no caches), "
               "warp-wide mma.m16n8k16 issued, the emulated cuBLAS's GEMM FLOPs, shared-memory "
               "bytes (ldmatrix's included):\n");
    fprintf(f, "%-48s %10s %16s %16s %12s %16s %16s %16s\n", "kernel", "launches", "bytes read",
            "bytes written", "mma", "GEMM FLOPs", "shared read", "shared written");
    for (const auto &k : traffic) {
        fprintf(f, "%-48s %10llu %16llu %16llu %12llu %16llu %16llu %16llu\n", k.first.c_str(),
                k.second.launches, k.second.bytes_read, k.second.bytes_written, k.second.mma,
                k.second.gemm_flops, k.second.shared_read, k.second.shared_written);
    }
}

} // namespace emu
