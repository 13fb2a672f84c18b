// GELU, tanh approximation (llmc/kernels/gelu.c), elementwise over floatX packs.
#ifndef FOLDNORM_GELU_CUH
#define FOLDNORM_GELU_CUH

#include "cuda_common.cuh"

#define GELU_SCALE_CUDA 0.7978845608028654f // sqrt(2 / pi)
#define GELU_CUBE_CUDA 0.044715f

__global__ void gelu_forward_kernel(floatX *out, const floatX *inp, size_t n) {
    const size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * PACK_X;
    if (i >= n) return;
    Pack<floatX> px = load_pack(inp + i), py;
    for (int k = 0; k < PACK_X; k++) {
        float x = to_float(px.v[k]);
        float u = GELU_SCALE_CUDA * (x + GELU_CUBE_CUDA * x * x * x);
        py.v[k] = from_float<floatX>(0.5f * x * (1.0f + tanhf(u)));
    }
    store_pack(out + i, py);
}

// dinp = gelu'(inp) dout
__global__ void gelu_backward_kernel(floatX *dinp, const floatX *inp, const floatX *dout,
                                     size_t n) {
    const size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * PACK_X;
    if (i >= n) return;
    Pack<floatX> px = load_pack(inp + i), pd = load_pack(dout + i), pr;
    for (int k = 0; k < PACK_X; k++) {
        float x = to_float(px.v[k]);
        float u = GELU_SCALE_CUDA * (x + GELU_CUBE_CUDA * x * x * x);
        float th = tanhf(u);
        float sech2 = 1.0f - th * th;
        float du_dx = GELU_SCALE_CUDA * (1.0f + 3.0f * GELU_CUBE_CUDA * x * x);
        pr.v[k] = from_float<floatX>((0.5f * (1.0f + th) + 0.5f * x * sech2 * du_dx) *
                                     to_float(pd.v[k]));
    }
    store_pack(dinp + i, pr);
}

// n % PACK_X == 0 (n = B*T*4C here)
static inline void gelu_forward_cuda(floatX *out, const floatX *inp, size_t n,
                                     cudaStream_t stream) {
    gelu_forward_kernel<<<ceil_div((long long)(n / PACK_X), 256), 256, 0, stream>>>(out, inp, n);
    CUDA_CHECK_LAUNCH();
}
static inline void gelu_backward_cuda(floatX *dinp, const floatX *inp, const floatX *dout,
                                      size_t n, cudaStream_t stream) {
    gelu_backward_kernel<<<ceil_div((long long)(n / PACK_X), 256), 256, 0, stream>>>(dinp, inp,
                                                                                     dout, n);
    CUDA_CHECK_LAUNCH();
}

#endif
