// CBWC on the GPU (llmc/kernels/cbwc.c, docs/math.md section 2).
//   projection: V = P W (every input column of W (OC, IC) centred over the
//     OC outputs) and P b, for all L layers of a stacked (L, OC, IC) tensor
//     in one launch; fused with the AdamW step of W in training, so that each
//     step reads the proxy weights once for both.
//   centred output gradient: P dy, rows of (N, OC) centred, so the c_proj
//     backward gives dx = (P dy) W and dW = (P dy)^T x.
#ifndef FOLDNORM_CBWC_CUH
#define FOLDNORM_CBWC_CUH

#include <string.h>

#include "adamw.cuh"
#include "cuda_common.cuh"

#define CBWC_COLUMNS 32   // a warp's 32 neighbouring columns: coalesced rows
#define CBWC_ROW_SLICES 8 // the rows split over 8 warps, their sums added in order

// V (L, OC, IC, floatX) = W - its column means, W fp32 master. Block: 32
// columns x 8 row slices of one layer. With ADAMW the same pass first
// updates W (and its floatX copy W_x, if any) from grads, m, v: the column
// means are those of the updated weights, and W is read from memory once.
template <bool ADAMW>
__global__ void cbwc_project_kernel(floatX *V, const float *W, float *W_out, floatX *W_x,
                                    const float *grads, float *m, float *v, AdamWStep a, int OC,
                                    int IC) {
    __shared__ float sums[CBWC_ROW_SLICES][CBWC_COLUMNS];
    __shared__ float means[CBWC_COLUMNS];
    const int col = threadIdx.x % CBWC_COLUMNS, slice = threadIdx.x / CBWC_COLUMNS;
    const int i = blockIdx.x * CBWC_COLUMNS + col;
    const size_t layer = (size_t)blockIdx.y * OC * IC;
    const int rows = (OC + CBWC_ROW_SLICES - 1) / CBWC_ROW_SLICES;
    const int o0 = slice * rows, o1 = min(OC, o0 + rows);
    float sum = 0.0f;
    const bool update = ADAMW && !adamw_skipped(a); // skipped: V of the unchanged W
    if (i < IC) {
        for (int o = o0; o < o1; o++) {
            const size_t j = layer + (size_t)o * IC + i;
            float w = W[j];
            if (update) {
                w = adamw_apply(w, grads[j], m + j, v + j, a);
                W_out[j] = w;
                if (W_x != NULL) W_x[j] = from_float<floatX>(w);
            }
            sum += w;
        }
    }
    sums[slice][col] = sum;
    __syncthreads();
    if (slice == 0) {
        float s = 0.0f;
        for (int k = 0; k < CBWC_ROW_SLICES; k++) s += sums[k][col];
        means[col] = s / (float)OC;
    }
    __syncthreads();
    const float mean = means[col];
    if (i >= IC) return;
    for (int o = o0; o < o1; o++) {
        const size_t j = layer + (size_t)o * IC + i;
        V[j] = from_float<floatX>(W[j] - mean); // W[j]: this thread's own update, if any
    }
}

// bias fp32 (L, OC) -> bias_c floatX = b - mean(b), one block per layer
__global__ void cbwc_centre_bias_kernel(floatX *bias_c, const float *bias, int OC) {
    const float *b = bias + (size_t)blockIdx.x * OC;
    float sum = 0.0f;
    for (int o = threadIdx.x; o < OC; o += blockDim.x) sum += b[o];
    const float mean = block_sum(sum) / (float)OC;
    for (int o = threadIdx.x; o < OC; o += blockDim.x) {
        bias_c[(size_t)blockIdx.x * OC + o] = from_float<floatX>(b[o] - mean);
    }
}

// out[n] = x[n] - mean(x[n]) for rows of width C (out may alias x), one warp per row
__global__ void centre_rows_kernel(floatX *out, const floatX *x, int N, int C) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= N) return;
    const size_t base = (size_t)row * C;
    float sum = 0.0f;
    for (int c = lane * PACK_X; c < C; c += 32 * PACK_X) {
        Pack<floatX> px = load_pack(x + base + c);
        for (int k = 0; k < PACK_X; k++) sum += to_float(px.v[k]);
    }
    const float mean = warp_sum(sum) / (float)C;
    for (int c = lane * PACK_X; c < C; c += 32 * PACK_X) {
        Pack<floatX> px = load_pack(x + base + c);
        for (int k = 0; k < PACK_X; k++) px.v[k] = from_float<floatX>(to_float(px.v[k]) - mean);
        store_pack(out + base + c, px);
    }
}

// bias_c (L, OC) = P b for all L layers
static inline void cbwc_centre_bias_cuda(floatX *bias_c, const float *bias, int L, int OC,
                                         cudaStream_t stream) {
    cbwc_centre_bias_kernel<<<L, 256, 0, stream>>>(bias_c, bias, OC);
    CUDA_CHECK_LAUNCH();
}

// V (L, OC, IC) = P W and bias_c (L, OC) = P b for all L layers
static inline void cbwc_project_cuda(floatX *V, floatX *bias_c, const float *W, const float *bias,
                                     int L, int OC, int IC, cudaStream_t stream) {
    dim3 grid(ceil_div(IC, CBWC_COLUMNS), L);
    AdamWStep unused;
    memset(&unused, 0, sizeof(unused));
    cbwc_project_kernel<false><<<grid, CBWC_COLUMNS * CBWC_ROW_SLICES, 0, stream>>>(
        V, W, NULL, NULL, NULL, NULL, NULL, unused, OC, IC);
    CUDA_CHECK_LAUNCH();
    cbwc_centre_bias_cuda(bias_c, bias, L, OC, stream);
}

// One AdamW step of the stacked proxy weights W (L, OC, IC) fused with their
// projection V = P W: g, m, v and W read once, W, m, v, W_x (may be NULL) and V
// written once (the second read of W, for V, comes from the cache).
static inline void adamw_cbwc_project_cuda(floatX *V, float *W, floatX *W_x, const float *grads,
                                           float *m, float *v, const AdamWStep &a, int L, int OC,
                                           int IC, cudaStream_t stream) {
    dim3 grid(ceil_div(IC, CBWC_COLUMNS), L);
    cbwc_project_kernel<true><<<grid, CBWC_COLUMNS * CBWC_ROW_SLICES, 0, stream>>>(
        V, W, W, W_x, grads, m, v, a, OC, IC);
    CUDA_CHECK_LAUNCH();
}

static inline void centre_rows_cuda(floatX *out, const floatX *x, int N, int C,
                                    cudaStream_t stream) {
    if (C % PACK_X != 0) {
        fprintf(stderr, "error: centre_rows needs C %% %d == 0, got C=%d\n", PACK_X, C);
        exit(EXIT_FAILURE);
    }
    centre_rows_kernel<<<ceil_div(N, 4), 128, 0, stream>>>(out, x, N, C);
    CUDA_CHECK_LAUNCH();
}

#endif
