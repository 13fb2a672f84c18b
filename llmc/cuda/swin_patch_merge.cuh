// Swin's PatchMerging gather on the GPU (llmc/kernels/swin_window.c): merged
// (B, res_out^2, 4, C) <- x (B, (2 res_out)^2, C), part p of output token
// (y, x) being input token (2y + (p & 1), 2x + (p >> 1)) -- the official
// order (0,0), (1,0), (0,1), (1,1). The backward is the inverse permutation,
// written as a gather too (one thread per dx element, dx overwritten), so
// every write is coalesced and no two threads touch the same element. The
// norm and the 4C -> 2C reduction that follow reuse the norm and matmul kernels.
// Rows move in 16-byte packs when C is a multiple of PACK_X, else element-wise.
#ifndef FOLDNORM_SWIN_PATCH_MERGE_CUH
#define FOLDNORM_SWIN_PATCH_MERGE_CUH

#include <stdint.h>

#include "cuda_common.cuh"

// V: floatX or Pack<floatX>; Cv = channels in units of V
template <typename V>
__global__ void swin_patch_merge_forward_kernel(V *merged, const V *x, int B, int res_out,
                                                int Cv) {
    const size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t N_out = (size_t)res_out * res_out, total = (size_t)B * N_out * 4 * Cv;
    if (idx >= total) return;
    const int c = (int)(idx % Cv), part = (int)((idx / Cv) % 4);
    const size_t bt = idx / ((size_t)Cv * 4);
    const int t = (int)(bt % N_out), res_in = 2 * res_out;
    const size_t b = bt / N_out;
    const int y = 2 * (t / res_out) + (part & 1), xi = 2 * (t % res_out) + (part >> 1);
    merged[idx] = x[((b * res_in + y) * res_in + xi) * Cv + c];
}

template <typename V>
__global__ void swin_patch_merge_backward_kernel(V *dx, const V *dmerged, int B, int res_out,
                                                 int Cv) {
    const size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int res_in = 2 * res_out;
    const size_t N_in = (size_t)res_in * res_in, total = (size_t)B * N_in * Cv;
    if (idx >= total) return;
    const int c = (int)(idx % Cv), tok = (int)((idx / Cv) % N_in);
    const size_t b = idx / ((size_t)Cv * N_in);
    const int y = tok / res_in, xi = tok % res_in;
    const int t = (y / 2) * res_out + xi / 2, part = (y & 1) | ((xi & 1) << 1);
    dx[idx] = dmerged[((b * res_out * res_out + t) * 4 + part) * Cv + c];
}

static inline void swin_patch_merge_check_shape(int B, int res_out, int C) {
    if (B <= 0 || res_out <= 0 || C <= 0) {
        fprintf(stderr, "error: Swin patch merging needs positive B, res_out, C (%d, %d, %d)\n", B,
                res_out, C);
        exit(EXIT_FAILURE);
    }
}

// 16-byte packs need C % PACK_X == 0 and 16-byte aligned buffers
static inline bool swin_patch_merge_packed(const void *a, const void *b, int C) {
    return C % PACK_X == 0 && (uintptr_t)a % 16 == 0 && (uintptr_t)b % 16 == 0;
}

// merged (B, res_out^2, 4C) from x (B, (2 res_out)^2, C)
static inline void swin_patch_merge_forward_cuda(floatX *merged, const floatX *x, int B,
                                                 int res_out, int C, cudaStream_t stream) {
    swin_patch_merge_check_shape(B, res_out, C);
    const long long total = (long long)B * res_out * res_out * 4 * C;
    if (swin_patch_merge_packed(merged, x, C)) {
        typedef Pack<floatX> P;
        swin_patch_merge_forward_kernel<P><<<ceil_div(total / PACK_X, 256), 256, 0, stream>>>(
            (P *)merged, (const P *)x, B, res_out, C / PACK_X);
    } else {
        swin_patch_merge_forward_kernel<floatX><<<ceil_div(total, 256), 256, 0, stream>>>(
            merged, x, B, res_out, C);
    }
    CUDA_CHECK_LAUNCH();
}

// dx (B, (2 res_out)^2, C), overwritten, from dmerged (B, res_out^2, 4C)
static inline void swin_patch_merge_backward_cuda(floatX *dx, const floatX *dmerged, int B,
                                                  int res_out, int C, cudaStream_t stream) {
    swin_patch_merge_check_shape(B, res_out, C);
    const long long total = (long long)B * res_out * res_out * 4 * C;
    if (swin_patch_merge_packed(dx, dmerged, C)) {
        typedef Pack<floatX> P;
        swin_patch_merge_backward_kernel<P><<<ceil_div(total / PACK_X, 256), 256, 0, stream>>>(
            (P *)dx, (const P *)dmerged, B, res_out, C / PACK_X);
    } else {
        swin_patch_merge_backward_kernel<floatX><<<ceil_div(total, 256), 256, 0, stream>>>(
            dx, dmerged, B, res_out, C);
    }
    CUDA_CHECK_LAUNCH();
}

#endif
