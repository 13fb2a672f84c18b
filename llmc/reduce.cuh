// Deterministic reductions: column sums of (N, OC) (the bias gradients) and
// the global sum of squares of the gradients (clipping). Both sum fixed
// chunks into partials, then add the partials in order.
#ifndef FOLDNORM_REDUCE_CUH
#define FOLDNORM_REDUCE_CUH

#include "cuda_common.cuh"

#define COLUMN_SUM_ROWS_PER_CHUNK 256

static inline int column_sum_chunks(int N) { return ceil_div(N, COLUMN_SUM_ROWS_PER_CHUNK); }

// partials[chunk][c] = sum of x[n][c] over the chunk's rows
__global__ void column_sum_partials_kernel(float *partials, const floatX *x, int N, int OC) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= OC) return;
    const int n0 = blockIdx.y * COLUMN_SUM_ROWS_PER_CHUNK;
    const int n1 = min(N, n0 + COLUMN_SUM_ROWS_PER_CHUNK);
    float sum = 0.0f;
    for (int n = n0; n < n1; n++) sum += to_float(x[(size_t)n * OC + c]);
    partials[(size_t)blockIdx.y * OC + c] = sum;
}

__global__ void column_sum_reduce_kernel(float *out, const float *partials, int chunks, int OC) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= OC) return;
    float sum = 0.0f;
    for (int k = 0; k < chunks; k++) sum += partials[(size_t)k * OC + c];
    out[c] += sum;
}

// out (OC, fp32) += column sums of x (N, OC); scratch: column_sum_chunks(N) * OC floats
static inline void column_sum_accumulate(float *out, float *scratch, const floatX *x, int N,
                                         int OC, cudaStream_t stream) {
    const int chunks = column_sum_chunks(N);
    dim3 grid(ceil_div(OC, 128), chunks);
    column_sum_partials_kernel<<<grid, 128, 0, stream>>>(scratch, x, N, OC);
    CUDA_CHECK_LAUNCH();
    column_sum_reduce_kernel<<<ceil_div(OC, 128), 128, 0, stream>>>(out, scratch, chunks, OC);
    CUDA_CHECK_LAUNCH();
}

#define SUMSQ_BLOCKS 512
#define SUMSQ_THREADS 256

// partials[block] = sum of squares over a grid-stride slice, in double
__global__ void sum_of_squares_partials_kernel(double *partials, const float *x, size_t n) {
    __shared__ double shared[SUMSQ_THREADS];
    double sum = 0.0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        sum += (double)x[i] * (double)x[i];
    }
    shared[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) partials[blockIdx.x] = shared[0];
}

// sum of squares of n fp32 values; scratch: SUMSQ_BLOCKS doubles. Synchronizes.
static inline double sum_of_squares_cuda(const float *x, size_t n, double *scratch,
                                         cudaStream_t stream) {
    sum_of_squares_partials_kernel<<<SUMSQ_BLOCKS, SUMSQ_THREADS, 0, stream>>>(scratch, x, n);
    CUDA_CHECK_LAUNCH();
    double partials[SUMSQ_BLOCKS];
    CUDA_CHECK(cudaMemcpyAsync(partials, scratch, sizeof(partials), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    double sum = 0.0;
    for (int i = 0; i < SUMSQ_BLOCKS; i++) sum += partials[i];
    return sum;
}

#endif
