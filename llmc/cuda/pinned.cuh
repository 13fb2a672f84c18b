// Page-locked host memory for the buffers the GPU copies batches from
// (llmc/gpt2/token_prefetch.h's allocator): a cudaMemcpyAsync from it is a
// true asynchronous DMA, where one from pageable memory is staged by the host.
#ifndef FOLDNORM_PINNED_CUH
#define FOLDNORM_PINNED_CUH

#include "cuda_common.cuh"

static inline void *cuda_pinned_alloc(size_t bytes) {
    void *p = NULL;
    CUDA_CHECK(cudaMallocHost(&p, bytes));
    return p;
}
static inline void cuda_pinned_free(void *p) { CUDA_CHECK(cudaFreeHost(p)); }

#endif
