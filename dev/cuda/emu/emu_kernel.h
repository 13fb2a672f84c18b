// CUDA emulation (a logic check, not a device run): what device code sees.
// Kernels are plain C++ functions; emu::launch runs every thread of a block
// as a fiber, blocks one after another (dev/cuda/emu/emu_fibers.cpp).
// __syncthreads is a barrier over the block's fibers, a warp shuffle a
// rendezvous of the warp's 32 lanes (write, barrier, read, barrier).
#ifndef FOLDNORM_EMU_KERNEL_H
#define FOLDNORM_EMU_KERNEL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __CUDA_EMULATED__ 1
// static __shared__ arrays are rewritten by rewrite_launches.py into
// `static thread_local` arrays poisoned at each block's first use
#define __shared__ static thread_local

struct uint3 {
    unsigned int x, y, z;
};
struct dim3 {
    unsigned int x, y, z;
    dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
    dim3(uint3 u) : x(u.x), y(u.y), z(u.z) {}
};

// the running fiber's indices (thread_local: ranks as threads launch concurrently)
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;
static const int warpSize = 32;

typedef struct emu_stream *cudaStream_t;

namespace emu {

void syncthreads();
void warp_barrier(unsigned mask, const char *what);
// each lane's staging: WARP_SLOT_WORDS 64-bit words (a shuffle or vote uses
// word 0; an mma's A and B registers take words 0-2 and the last word names
// the warp operation: emu_mma.cpp)
const int WARP_SLOT_WORDS = 4;
uint64_t *warp_slot(int lane);       // this warp's staging words of a lane
int lane_id();
void *dynamic_shared(const char *name); // the launch's extern __shared__ buffer, as `name`
unsigned long long block_generation(); // changes with every block
// a static __shared__ array at a block's first use: poisoned, shown to the race detector
void shared_array_begins(void *p, size_t bytes, const char *name);
// an atomic read-modify-write of p, made at pc (the race detector's view)
void atomic_access(void *p, size_t bytes, const void *pc);
[[noreturn]] void device_abort(const char *fmt, ...);

struct LaunchConfig {
    dim3 grid, block;
    size_t shared_bytes;
    cudaStream_t stream;
};
inline LaunchConfig config(dim3 grid, dim3 block, size_t shared_bytes = 0,
                           cudaStream_t stream = 0) {
    return LaunchConfig{grid, block, shared_bytes, stream};
}
// name: the launch's text ("norm_kernel<T>": messages, traffic counts);
// instance: the kernel with its template arguments ("norm_kernel<float>": race coverage)
void run_grid(const char *name, const char *instance, const void *kernel, const LaunchConfig &cfg,
              void (*body)(void *), void *ctx);

// "norm_kernel<float>" from g++'s __PRETTY_FUNCTION__ of kernel_name<&norm_kernel<float>>
// (parsed once a string, in the emulator: no function-local static here, whose
// guard the race detector's instrumentation would see)
const char *kernel_instance_name(const char *pretty_function);
template <auto K> inline const char *kernel_name() { return kernel_instance_name(__PRETTY_FUNCTION__); }


// x with its bits in a 64-bit slot, and back
template <typename T> inline uint64_t to_slot(T v) {
    static_assert(sizeof(T) <= 8, "shuffle of a type wider than 8 bytes");
    uint64_t s = 0;
    memcpy(&s, &v, sizeof(T));
    return s;
}
template <typename T> inline T from_slot(uint64_t s) {
    T v;
    memcpy(&v, &s, sizeof(T));
    return v;
}

// every lane writes v, reads the value of lane src(lane) (its own when out of range)
template <typename T, typename Src>
inline T shuffle(unsigned mask, T v, Src src, const char *what) {
    const int lane = lane_id();
    *warp_slot(lane) = to_slot(v);
    warp_barrier(mask, what); // every lane has written
    const int from = src(lane);
    T r = from >= 0 && from < 32 ? from_slot<T>(*warp_slot(from)) : v;
    warp_barrier(mask, what); // every lane has read before the slots are reused
    return r;
}

} // namespace emu

// kernel<<<cfg>>>(args) becomes
// launch("kernel", kernel_name<&kernel>(), &kernel, config(cfg), bind_kernel(&kernel)(args)):
// the arguments are evaluated once, at the launch, and converted to the
// kernel's parameter types as a call would, so a launch captured into a CUDA
// graph keeps them by value, as the device does
#include "emu_launch.h"

// shuffles within segments of `width` lanes, as the device
template <typename T> inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
    return emu::shuffle(mask, v, [=](int l) {
        int s = l ^ lane_mask;
        return s / width == l / width ? s : l;
    }, "__shfl_xor_sync");
}
template <typename T> inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    return emu::shuffle(mask, v, [=](int l) {
        int s = l + (int)delta;
        return s / width == l / width ? s : l;
    }, "__shfl_down_sync");
}
template <typename T> inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    return emu::shuffle(mask, v, [=](int l) {
        int s = l - (int)delta;
        return s >= 0 && s / width == l / width ? s : l;
    }, "__shfl_up_sync");
}
template <typename T> inline T __shfl_sync(unsigned mask, T v, int src_lane, int width = 32) {
    return emu::shuffle(mask, v, [=](int l) { return (l / width) * width + src_lane % width; },
                        "__shfl_sync");
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
    unsigned bits = 0;
    const int lane = emu::lane_id();
    *emu::warp_slot(lane) = predicate != 0;
    emu::warp_barrier(mask, "__ballot_sync");
    for (int l = 0; l < 32; l++) bits |= (unsigned)(*emu::warp_slot(l) != 0) << l;
    emu::warp_barrier(mask, "__ballot_sync");
    return bits;
}
inline int __all_sync(unsigned mask, int p) { return __ballot_sync(mask, p) == 0xffffffffu; }
inline int __any_sync(unsigned mask, int p) { return __ballot_sync(mask, p) != 0u; }
inline void __syncwarp(unsigned mask = 0xffffffffu) { emu::warp_barrier(mask, "__syncwarp"); }
inline void __syncthreads() { emu::syncthreads(); }
inline void __threadfence() {}
inline void __threadfence_block() {}

// one fiber runs at a time: read-modify-write is atomic by construction
// (so the emulator cannot see a missing atomic). The race detector sees one
// atomic access (atomics race only with plain accesses), not the plain load
// and store inside: those are left uninstrumented, hence noinline
#define EMU_ATOMIC __attribute__((noinline, no_sanitize("thread")))
template <typename T> EMU_ATOMIC T atomicAdd(T *p, T v) {
    emu::atomic_access(p, sizeof(T), __builtin_return_address(0));
    T old = *p;
    *p = old + v;
    return old;
}
template <typename T> EMU_ATOMIC T atomicMax(T *p, T v) {
    emu::atomic_access(p, sizeof(T), __builtin_return_address(0));
    T old = *p;
    *p = old > v ? old : v;
    return old;
}
template <typename T> EMU_ATOMIC T atomicMin(T *p, T v) {
    emu::atomic_access(p, sizeof(T), __builtin_return_address(0));
    T old = *p;
    *p = old < v ? old : v;
    return old;
}
template <typename T> EMU_ATOMIC T atomicExch(T *p, T v) {
    emu::atomic_access(p, sizeof(T), __builtin_return_address(0));
    T old = *p;
    *p = v;
    return old;
}
template <typename T> EMU_ATOMIC T atomicCAS(T *p, T compare, T v) {
    emu::atomic_access(p, sizeof(T), __builtin_return_address(0));
    T old = *p;
    if (old == compare) *p = v;
    return old;
}

// device math: the fast intrinsics map to the libm functions, so rounding
// differs from the device's approximations (bf16 margins need headroom)
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __tanhf(float x) { return tanhf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
template <typename T> inline T __ldg(const T *p) { return *p; }
template <typename A, typename B> inline typename std::common_type<A, B>::type min(A a, B b) {
    return a < b ? a : b;
}
template <typename A, typename B> inline typename std::common_type<A, B>::type max(A a, B b) {
    return a < b ? b : a;
}

// a static __shared__ array reads as NaN (0xFF bytes) until written in each
// block: poisoned by the first thread of a block that reaches the declaration
#define EMU_SHARED_POISON(name)                                                    \
    static thread_local unsigned long long name##_emu_block = 0;                   \
    if (name##_emu_block != emu::block_generation()) {                             \
        emu::shared_array_begins((void *)&name, sizeof(name), #name);              \
        name##_emu_block = emu::block_generation();                                \
    }

#endif
