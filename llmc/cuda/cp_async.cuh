// cp.async (sm_80+): copies of 4, 8 or 16 bytes from global to shared memory
// that run beside the thread, so a tile loads while the previous one is used.
// A thread's copies become a group at cp_async_commit_group();
// cp_async_wait_group<N>() waits until at most the newest N committed groups
// are pending (the older ones have landed), cp_async_wait_all() for every
// copy. A copy lands only for its own thread: other threads may read it
// after the wait and a __syncthreads. Until the wait, the destination must
// not be read or written, nor the source written. The PTX is the ISA's
// ("cp.async", "cp.async.commit_group", "cp.async.wait_group", 9.7.9.25-27
// in PTX ISA 9.0); under emulation dev/cuda/emu/emu_async.cpp does the same
// and its race detector holds kernels to those rules.
#ifndef FOLDNORM_CP_ASYNC_CUH
#define FOLDNORM_CP_ASYNC_CUH

#include <stdint.h>

#include "cuda_common.cuh"

#if defined(__CUDA_EMULATED__)
#include <emu_async.h>
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "llmc/cuda/cp_async.cuh: cp.async needs sm_80 or newer (CUDA_ARCHS in mk/cuda.mk)"
#endif

// 16 bytes, both addresses 16-byte aligned, cached in L2 only (.cg): the
// first src_bytes (0..16) from src, the rest zero (src not read when 0)
__device__ inline void cp_async_cg16(void *smem, const void *gmem, int src_bytes = 16) {
#if defined(__CUDA_EMULATED__)
    emu::cp_async(smem, gmem, 16, src_bytes, true);
#else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"((uint32_t)__cvta_generic_to_shared(smem)), "l"(gmem), "r"(src_bytes)
                 : "memory");
#endif
}

// BYTES = 4, 8 or 16, both addresses BYTES-aligned, cached in L1 too (.ca)
template <int BYTES> __device__ inline void cp_async_ca(void *smem, const void *gmem) {
    static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
#if defined(__CUDA_EMULATED__)
    emu::cp_async(smem, gmem, BYTES, BYTES, false);
#else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n"
                 :: "r"((uint32_t)__cvta_generic_to_shared(smem)), "l"(gmem), "n"(BYTES)
                 : "memory");
#endif
}

__device__ inline void cp_async_commit_group() {
#if defined(__CUDA_EMULATED__)
    emu::cp_async_commit();
#else
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

template <int N> __device__ inline void cp_async_wait_group() {
    static_assert(N >= 0 && N <= 7, "cp.async.wait_group takes 0..7 here");
#if defined(__CUDA_EMULATED__)
    emu::cp_async_wait(N);
#else
    asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
#endif
}

__device__ inline void cp_async_wait_all() {
#if defined(__CUDA_EMULATED__)
    emu::cp_async_wait(-1);
#else
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

#endif
