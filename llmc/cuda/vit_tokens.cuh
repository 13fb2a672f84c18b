// ViT's token stream ends on the GPU (llmc/vision/vit.c): the class token and the
// position embedding in front of the blocks, the class-token rows the head
// reads behind them.
//   forward: stream[b, 0] = cls + pos[0], stream[b, t] = patch_out[b, t-1] + pos[t];
//     cbwc (docs/math.md section 3): each row centred over C, which is
//     P cls + P pos[t] and P patch_out + P pos[t] (P patch_out = patch_out:
//     the patch embedding's V and bias are centred already)
//   backward: dpos[t] += sum_b d[b, t], dcls += sum_b d[b, 0] (b in order: no
//     atomics), dpatch[b, t-1] = d[b, t]; cbwc passes P d (centre_rows_cuda)
#ifndef FOLDNORM_VIT_TOKENS_CUH
#define FOLDNORM_VIT_TOKENS_CUH

#include "cuda_common.cuh"

// one warp per stream row (b, t)
__global__ void vit_tokens_forward_kernel(floatX *stream, const floatX *patch_out,
                                          const floatX *cls, const floatX *pos, int B, int T,
                                          int C, int centred) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= B * T) return;
    const int b = row / T, t = row % T;
    const floatX *src = t == 0 ? cls : patch_out + ((size_t)b * (T - 1) + t - 1) * C;
    const floatX *p = pos + (size_t)t * C;
    float sum = 0.0f;
    for (int c = lane; c < C; c += 32) sum += to_float(src[c]) + to_float(p[c]);
    const float mean = centred ? warp_sum(sum) / (float)C : 0.0f;
    floatX *dst = stream + (size_t)row * C;
    for (int c = lane; c < C; c += 32) {
        dst[c] = from_float<floatX>(to_float(src[c]) + to_float(p[c]) - mean);
    }
}

// one thread per (t, c): dpos[t, c] += sum_b d[b, t, c], and dcls for t = 0
__global__ void vit_tokens_backward_kernel(float *dcls, float *dpos, const floatX *dstream, int B,
                                           int T, int C) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)T * C) return;
    float sum = 0.0f;
    for (int b = 0; b < B; b++) sum += to_float(dstream[(size_t)b * T * C + i]);
    dpos[i] += sum;
    if (i < (size_t)C) dcls[i] += sum;
}

// dpatch (B, T-1, C) = the patch rows of dstream (B, T, C)
__global__ void vit_patch_rows_kernel(floatX *dpatch, const floatX *dstream, int B, int T, int C) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t per_image = (size_t)(T - 1) * C;
    if (i >= (size_t)B * per_image) return;
    const size_t b = i / per_image;
    dpatch[i] = dstream[b * T * C + C + i % per_image];
}

// rows (B, C) = the class-token rows of x (B, T, C)
__global__ void vit_cls_rows_kernel(floatX *rows, const floatX *x, int B, int T, int C) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)B * C) return;
    rows[i] = x[(i / C) * T * C + i % C];
}

// dx (B, T, C): the class-token rows from drows (B, C), every other row 0
__global__ void vit_cls_rows_backward_kernel(floatX *dx, const floatX *drows, int B, int T, int C) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)B * T * C) return;
    const size_t b = i / ((size_t)T * C), r = i % ((size_t)T * C);
    dx[i] = r < (size_t)C ? drows[b * C + r] : from_float<floatX>(0.0f);
}

static inline void vit_tokens_forward_cuda(floatX *stream, const floatX *patch_out, const floatX *cls,
                                           const floatX *pos, int B, int T, int C, int centred,
                                           cudaStream_t st) {
    vit_tokens_forward_kernel<<<ceil_div((long long)B * T, 4), 128, 0, st>>>(
        stream, patch_out, cls, pos, B, T, C, centred);
    CUDA_CHECK_LAUNCH();
}

// dcls, dpos (fp32) += their gradients; dpatch (B (T-1), C) = the patch rows
static inline void vit_tokens_backward_cuda(float *dcls, float *dpos, floatX *dpatch,
                                            const floatX *dstream, int B, int T, int C,
                                            cudaStream_t st) {
    vit_tokens_backward_kernel<<<ceil_div((long long)T * C, 256), 256, 0, st>>>(dcls, dpos, dstream,
                                                                                B, T, C);
    CUDA_CHECK_LAUNCH();
    vit_patch_rows_kernel<<<ceil_div((long long)B * (T - 1) * C, 256), 256, 0, st>>>(dpatch, dstream,
                                                                                     B, T, C);
    CUDA_CHECK_LAUNCH();
}

static inline void vit_cls_rows_cuda(floatX *rows, const floatX *x, int B, int T, int C,
                                     cudaStream_t st) {
    vit_cls_rows_kernel<<<ceil_div((long long)B * C, 256), 256, 0, st>>>(rows, x, B, T, C);
    CUDA_CHECK_LAUNCH();
}

static inline void vit_cls_rows_backward_cuda(floatX *dx, const floatX *drows, int B, int T, int C,
                                              cudaStream_t st) {
    vit_cls_rows_backward_kernel<<<ceil_div((long long)B * T * C, 256), 256, 0, st>>>(dx, drows, B,
                                                                                      T, C);
    CUDA_CHECK_LAUNCH();
}

#endif
