// Deterministic reductions: column sums of (N, OC) (the bias gradients) and
// the global sum of squares of the gradients (clipping). Both sum fixed
// chunks into partials, then add the partials in order.
#ifndef FOLDNORM_REDUCE_CUH
#define FOLDNORM_REDUCE_CUH

#include "cuda_common.cuh"

#define COLUMN_SUM_ROWS_PER_CHUNK 64 // 16384 rows: 256 chunks, enough blocks in flight
#define COLUMN_SUM_GROUPS 16

static inline int column_sum_chunks(int N) { return ceil_div(N, COLUMN_SUM_ROWS_PER_CHUNK); }

// partials[chunk][c] = sum of x[n][c] over the chunk's rows, in row order;
// a thread owns PACK_X adjacent columns (one 16-byte load a row) when OC %
// PACK_X == 0 (PACKED), else one.
template <bool PACKED>
__global__ void column_sum_partials_kernel(float *partials, const floatX *x, int N, int OC) {
    const int width = PACKED ? PACK_X : 1;
    const int c0 = (blockIdx.x * blockDim.x + threadIdx.x) * width;
    if (c0 >= OC) return;
    const int n0 = blockIdx.y * COLUMN_SUM_ROWS_PER_CHUNK;
    const int n1 = min(N, n0 + COLUMN_SUM_ROWS_PER_CHUNK);
    float sum[PACK_X] = {0.0f};
    for (int n = n0; n < n1; n++) {
        if (PACKED) {
            const Pack<floatX> p = load_pack(x + (size_t)n * OC + c0);
            for (int k = 0; k < PACK_X; k++) sum[k] += to_float(p.v[k]);
        } else {
            sum[0] += to_float(x[(size_t)n * OC + c0]);
        }
    }
    for (int k = 0; k < width; k++) partials[(size_t)blockIdx.y * OC + c0 + k] = sum[k];
}

// out[c] += the sum of partials[k][c] over the chunks: a (32 x GROUPS) block
// per 32 columns; thread (x, y) adds chunks y, y + GROUPS, ... of column x in
// order (a warp reads 32 consecutive floats), thread y = 0 the GROUPS sums in
// order. Fixed for a given N: the same sums every run.
__global__ void column_sum_reduce_kernel(float *out, const float *partials, int chunks, int OC) {
    __shared__ float sums[COLUMN_SUM_GROUPS][32];
    const int c = blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f;
    if (c < OC) {
        for (int k = threadIdx.y; k < chunks; k += COLUMN_SUM_GROUPS) s += partials[(size_t)k * OC + c];
    }
    sums[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y != 0 || c >= OC) return;
    float total = 0.0f;
    for (int g = 0; g < COLUMN_SUM_GROUPS; g++) total += sums[g][threadIdx.x];
    out[c] += total;
}

// out (OC, fp32) += column sums of x (N, OC); scratch: column_sum_chunks(N) * OC floats
static inline void column_sum_accumulate(float *out, float *scratch, const floatX *x, int N,
                                         int OC, cudaStream_t stream) {
    const int chunks = column_sum_chunks(N);
    if (OC % PACK_X == 0) {
        dim3 grid(ceil_div(OC / PACK_X, 128), chunks);
        column_sum_partials_kernel<true><<<grid, 128, 0, stream>>>(scratch, x, N, OC);
    } else {
        dim3 grid(ceil_div(OC, 128), chunks);
        column_sum_partials_kernel<false><<<grid, 128, 0, stream>>>(scratch, x, N, OC);
    }
    CUDA_CHECK_LAUNCH();
    column_sum_reduce_kernel<<<ceil_div(OC, 32), dim3(32, COLUMN_SUM_GROUPS), 0, stream>>>(
        out, scratch, chunks, OC);
    CUDA_CHECK_LAUNCH();
}

// Up to FLOAT_SEGMENTS pairs dst[i] (n[i] floats) += src[i]: a layer's bias
// gradients made by cuBLASLt's BGRAD epilogues (which overwrite) added to the
// accumulated gradients in one launch.
#define FLOAT_SEGMENTS 4
typedef struct {
    float *dst[FLOAT_SEGMENTS];
    const float *src[FLOAT_SEGMENTS];
    int n[FLOAT_SEGMENTS];
    int count;
} FloatSegments;

static inline void float_segments_push(FloatSegments *s, float *dst, const float *src, int n) {
    if (s->count == FLOAT_SEGMENTS) {
        fprintf(stderr, "error: float_segments_push: more than %d segments\n", FLOAT_SEGMENTS);
        exit(EXIT_FAILURE);
    }
    s->dst[s->count] = dst;
    s->src[s->count] = src;
    s->n[s->count++] = n;
}

__global__ void float_segments_accumulate_kernel(FloatSegments s) {
    const int seg = blockIdx.y, i = blockIdx.x * blockDim.x + threadIdx.x;
    if (seg < s.count && i < s.n[seg]) s.dst[seg][i] += s.src[seg][i];
}

static inline void float_segments_accumulate(const FloatSegments *s, cudaStream_t stream) {
    if (s->count == 0) return;
    int longest = 0;
    for (int i = 0; i < s->count; i++) longest = s->n[i] > longest ? s->n[i] : longest;
    dim3 grid(ceil_div(longest, 256), s->count);
    float_segments_accumulate_kernel<<<grid, 256, 0, stream>>>(*s);
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

// *out = the partials summed in block order by one thread (fixed: the same
// bits every run), added to *out when accumulate
__global__ void sum_of_squares_total_kernel(double *out, const double *partials, int accumulate) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    double sum = 0.0;
    for (int i = 0; i < SUMSQ_BLOCKS; i++) sum += partials[i];
    *out = accumulate ? *out + sum : sum;
}

// Queues *out (device) = the sum of squares of n fp32 values, or *out += it
// when accumulate; scratch: SUMSQ_BLOCKS doubles. Nothing waits for the GPU.
static inline void sum_of_squares_device(double *out, int accumulate, const float *x, size_t n,
                                         double *scratch, cudaStream_t stream) {
    sum_of_squares_partials_kernel<<<SUMSQ_BLOCKS, SUMSQ_THREADS, 0, stream>>>(scratch, x, n);
    CUDA_CHECK_LAUNCH();
    sum_of_squares_total_kernel<<<1, 32, 0, stream>>>(out, scratch, accumulate);
    CUDA_CHECK_LAUNCH();
}

#endif
