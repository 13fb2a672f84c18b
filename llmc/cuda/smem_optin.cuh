// A kernel that needs more than 48 KiB of dynamic shared memory a block must
// opt in (cudaFuncSetAttribute), up to the device's opt-in limit; beyond it
// the shape does not fit. One owner for that rule: the attention kernels
// (flash, tensor-core, Swin window) call smem_optin before each launch, and
// the attribute is set (and the limit queried) once per kernel, device and
// larger size, not on every launch. The table is per host thread (the
// emulated NCCL's ranks are threads, each on its own device).
#ifndef FOLDNORM_SMEM_OPTIN_CUH
#define FOLDNORM_SMEM_OPTIN_CUH

#include <stdio.h>
#include <stdlib.h>

#include "cuda_common.cuh"

static inline void smem_optin_kernel(const void *kernel, size_t bytes, const char *what) {
    if (bytes <= 48 * 1024) return;
    struct Entry {
        const void *kernel;
        int device;
        size_t bytes; // the largest size set so far
    };
    static thread_local Entry entries[64];
    static thread_local int count = 0;
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    Entry *e = NULL;
    for (int i = 0; i < count; i++) {
        if (entries[i].kernel == kernel && entries[i].device == device) e = &entries[i];
    }
    if (e != NULL && e->bytes >= bytes) return;
    int limit = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    if (bytes > (size_t)limit) {
        fprintf(stderr,
                "error: %s needs %zu bytes of shared memory a block, more than the device's %d "
                "(head or window size too large)\n",
                what, bytes, limit);
        exit(EXIT_FAILURE);
    }
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    if (e == NULL && count < (int)(sizeof(entries) / sizeof(entries[0]))) e = &entries[count++];
    if (e != NULL) *e = Entry{kernel, device, bytes}; // a full table: set again next time
}

template <typename K> static inline void smem_optin(K kernel, size_t bytes, const char *what) {
    smem_optin_kernel((const void *)kernel, bytes, what);
}

#endif
