// Token + position embedding on the GPU (llmc/kernels/encoder.c). In cbwc the
// rows are centred at the read: out = (e - mean(e)) + (p - mean(p))
// (docs/math.md section 3); the backward centres the gradient rows likewise.
#ifndef FOLDNORM_ENCODER_CUH
#define FOLDNORM_ENCODER_CUH

#include "cuda_common.cuh"

// one warp per (b, t) row
__global__ void encoder_forward_kernel(floatX *out, const int *tokens, const floatX *wte,
                                       const floatX *wpe, int BT, int T, int C, int centred) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= BT) return;
    const floatX *e = wte + (size_t)tokens[row] * C;
    const floatX *p = wpe + (size_t)(row % T) * C;
    float shift = 0.0f;
    if (centred) {
        float sum_e = 0.0f, sum_p = 0.0f;
        for (int c = lane * PACK_X; c < C; c += 32 * PACK_X) {
            Pack<floatX> pe = load_pack(e + c), pp = load_pack(p + c);
            for (int k = 0; k < PACK_X; k++) {
                sum_e += to_float(pe.v[k]);
                sum_p += to_float(pp.v[k]);
            }
        }
        shift = warp_sum(sum_e) / (float)C + warp_sum(sum_p) / (float)C;
    }
    for (int c = lane * PACK_X; c < C; c += 32 * PACK_X) {
        Pack<floatX> pe = load_pack(e + c), pp = load_pack(p + c), po;
        for (int k = 0; k < PACK_X; k++) {
            po.v[k] = from_float<floatX>(to_float(pe.v[k]) + to_float(pp.v[k]) - shift);
        }
        store_pack(out + (size_t)row * C + c, po);
    }
}

// row_shift[row] = mean(dout row) in cbwc, 0 otherwise; one warp per row
__global__ void encoder_row_means_kernel(float *row_shift, const floatX *dout, int BT, int C,
                                         int centred) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= BT) return;
    float sum = 0.0f;
    if (centred) {
        for (int c = lane * PACK_X; c < C; c += 32 * PACK_X) {
            Pack<floatX> pd = load_pack(dout + (size_t)row * C + c);
            for (int k = 0; k < PACK_X; k++) sum += to_float(pd.v[k]);
        }
        sum = warp_sum(sum) / (float)C;
    }
    if (lane == 0) row_shift[row] = sum;
}

// dwte[token[u]] += sum over the rows of bucket u (llmc/kernels/token_buckets.h), in
// increasing row order, of dout - shift: one thread per (bucket, column) owns
// its output, so the sum has a fixed order and no atomics. grid (buckets,
// ceil(C / blockDim.x)).
__global__ void encoder_backward_wte_kernel(float *dwte, const floatX *dout, const float *row_shift,
                                            const int *bucket_token, const int *bucket_start,
                                            const int *bucket_rows, int C) {
    const int u = blockIdx.x;
    const int c = blockIdx.y * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float sum = 0.0f;
    for (int e = bucket_start[u]; e < bucket_start[u + 1]; e++) {
        const int row = bucket_rows[e];
        sum += to_float(dout[(size_t)row * C + c]) - row_shift[row];
    }
    dwte[(size_t)bucket_token[u] * C + c] += sum;
}

// dwpe[t] += sum over b of (dout[b, t] - shift), b in order: deterministic
__global__ void encoder_backward_wpe_kernel(float *dwpe, const floatX *dout, const float *row_shift,
                                            int B, int T, int C) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)T * C) return;
    const int t = (int)(i / C), c = (int)(i % C);
    float sum = 0.0f;
    for (int b = 0; b < B; b++) {
        const size_t row = (size_t)b * T + t;
        sum += to_float(dout[row * C + c]) - row_shift[row];
    }
    dwpe[i] += sum;
}

static inline void encoder_forward_cuda(floatX *out, const int *tokens, const floatX *wte,
                                        const floatX *wpe, int B, int T, int C, int centred,
                                        cudaStream_t stream) {
    encoder_forward_kernel<<<ceil_div((long long)B * T, 4), 128, 0, stream>>>(
        out, tokens, wte, wpe, B * T, T, C, centred);
    CUDA_CHECK_LAUNCH();
}

// The rows grouped by token on the host (token_buckets_build over the
// inputs), on the device: num_buckets buckets, as TokenBuckets lays them out.
typedef struct {
    int num_buckets;
    const int *token, *start, *rows;
} DeviceTokenBuckets;

// row_shift: B*T floats of scratch
static inline void encoder_backward_cuda(float *dwte, float *dwpe, float *row_shift,
                                         const floatX *dout, const DeviceTokenBuckets *buckets,
                                         int B, int T, int C, int centred, cudaStream_t stream) {
    const int BT = B * T;
    encoder_row_means_kernel<<<ceil_div(BT, 4), 128, 0, stream>>>(row_shift, dout, BT, C,
                                                                  centred);
    CUDA_CHECK_LAUNCH();
    if (buckets->num_buckets > 0) {
        dim3 grid(buckets->num_buckets, ceil_div(C, 256));
        encoder_backward_wte_kernel<<<grid, 256, 0, stream>>>(dwte, dout, row_shift, buckets->token,
                                                              buckets->start, buckets->rows, C);
        CUDA_CHECK_LAUNCH();
    }
    encoder_backward_wpe_kernel<<<ceil_div((long long)T * C, 256), 256, 0, stream>>>(
        dwpe, dout, row_shift, B, T, C);
    CUDA_CHECK_LAUNCH();
}

#endif
