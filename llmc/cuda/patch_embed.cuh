// ViT patch embedding on the GPU (llmc/kernels/patch_embed.c + the linear of llmc/vision/vit.c):
// the stride-P convolution as im2col + one cuBLASLt matmul.
//   patches (B Np, Cin P P): patch (py, px) of image b in row (b grid + py) grid + px,
//     its pixels in (channel, dy, dx) order (the conv weight's (C, Cin, P, P) layout)
//   out (B Np, C) = patches W^T + bias
// backward: dW (fp32) += dout^T patches, dbias += column sums of dout (no
// input gradient: the images are data).
#ifndef FOLDNORM_PATCH_EMBED_CUH
#define FOLDNORM_PATCH_EMBED_CUH

#include "cuda_common.cuh"
#include "matmul_cublaslt.cuh"
#include "reduce.cuh"

// one thread per patch element; images (B, Cin, S, S) fp32 as read from data
__global__ void patches_from_images_kernel(floatX *patches, const float *images, int B, int Cin,
                                           int S, int P) {
    const int grid = S / P, PD = Cin * P * P;
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)B * grid * grid * PD) return;
    const int e = (int)(i % PD);
    const size_t patch = i / PD; // (b grid + py) grid + px
    const int px = (int)(patch % grid), py = (int)(patch / grid % grid);
    const size_t b = patch / ((size_t)grid * grid);
    const int c = e / (P * P), dy = e / P % P, dx = e % P;
    patches[i] = from_float<floatX>(
        images[((b * Cin + c) * S + (size_t)py * P + dy) * S + (size_t)px * P + dx]);
}

static inline void patches_from_images_cuda(floatX *patches, const float *images, int B, int Cin,
                                            int S, int P, cudaStream_t stream) {
    const long long n = (long long)B * (S / P) * (S / P) * Cin * P * P;
    patches_from_images_kernel<<<ceil_div(n, 256), 256, 0, stream>>>(patches, images, B, Cin, S, P);
    CUDA_CHECK_LAUNCH();
}

// patches (B Np, PD) from the images, then out (B Np, C) = patches W^T + bias
static inline void patch_embed_forward_cuda(const MatmulContext *mm, floatX *out, floatX *patches,
                                            const float *images, const floatX *weight,
                                            const floatX *bias, int B, int Cin, int S, int P,
                                            int C) {
    patches_from_images_cuda(patches, images, B, Cin, S, P, mm->stream);
    const int Np = (S / P) * (S / P);
    matmul_forward_cuda(mm, out, patches, weight, bias, B * Np, Cin * P * P, C);
}

// dweight (C, PD) += dout^T patches, dbias (C) += column sums of dout (B Np, C);
// scratch: column_sum_chunks(B Np) * C floats
static inline void patch_embed_backward_cuda(const MatmulContext *mm, float *dweight, float *dbias,
                                             float *scratch, const floatX *dout,
                                             const floatX *patches, int N, int PD, int C) {
    column_sum_accumulate(dbias, scratch, dout, N, C, mm->stream);
    matmul_lt(mm, dweight, CUDA_R_32F, patches, dout, NULL, PD, C, N, false, true, 1.0f, 1.0f);
}

#endif
