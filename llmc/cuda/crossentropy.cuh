// Fused softmax + cross-entropy over logits (N, Vp), the first V columns
// real (llmc/kernels/crossentropy.c). One block per row. A target < 0 masks the
// row: loss 0 and, in the backward, a zero gradient.
#ifndef FOLDNORM_CROSSENTROPY_CUH
#define FOLDNORM_CROSSENTROPY_CUH

#include "cuda_common.cuh"

#define CE_THREADS 512

// The online softmax state of a set of values: their max m and the sum of
// exp(v - m). Two states merge exactly as one over both sets would
// (the smaller max's sum rescaled by exp(its m - the larger m)).
struct SoftmaxState {
    float m, s;
};
__device__ inline SoftmaxState softmax_add(SoftmaxState a, float v) {
    if (v > a.m) return SoftmaxState{v, a.s * expf(a.m - v) + 1.0f};
    return SoftmaxState{a.m, a.s + expf(v - a.m)};
}
__device__ inline SoftmaxState softmax_merge(SoftmaxState a, SoftmaxState b) {
    if (b.m > a.m) { SoftmaxState t = a; a = b; b = t; }
    return SoftmaxState{a.m, a.s + (b.s == 0.0f ? 0.0f : b.s * expf(b.m - a.m))};
}
__device__ inline SoftmaxState warp_softmax_merge(SoftmaxState x) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        SoftmaxState y{__shfl_xor_sync(0xffffffffu, x.m, offset), __shfl_xor_sync(0xffffffffu, x.s, offset)};
        x = softmax_merge(x, y);
    }
    return x;
}
// every thread's state merged over the block (a fixed tree: lanes, then warps)
__device__ inline SoftmaxState block_softmax_merge(SoftmaxState x) {
    __shared__ SoftmaxState warp_states[32];
    __shared__ SoftmaxState result;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    x = warp_softmax_merge(x);
    if (lane == 0) warp_states[warp] = x;
    __syncthreads();
    if (warp == 0) {
        SoftmaxState y = lane < warps ? warp_states[lane] : SoftmaxState{-INFINITY, 0.0f};
        y = warp_softmax_merge(y);
        if (lane == 0) result = y;
    }
    __syncthreads();
    return result;
}

// losses[n] = logsumexp(x) - x[target]; with write_grad, the row is
// overwritten by its gradient scale (softmax(x) - onehot(target)), zero in
// the padding columns V..Vp-1. Two passes over the row: the online max and
// sum (one exp per value), then the gradient; 16-byte loads and stores
// (Vp % PACK_X == 0, crossentropy_cuda checks), the last partial pack of the
// V real columns element by element.
__global__ void crossentropy_kernel(float *losses, floatX *logits, const int *targets, int V,
                                    int Vp, float scale, int write_grad) {
    floatX *x = logits + (size_t)blockIdx.x * Vp;
    const int target = targets[blockIdx.x];
    if (target < 0) {
        if (threadIdx.x == 0) losses[blockIdx.x] = 0.0f;
        if (write_grad) {
            Pack<floatX> zero;
            for (int k = 0; k < PACK_X; k++) zero.v[k] = from_float<floatX>(0.0f);
            for (int i = threadIdx.x * PACK_X; i < Vp; i += blockDim.x * PACK_X) store_pack(x + i, zero);
        }
        return;
    }
    const int full = V / PACK_X * PACK_X; // columns in whole packs of real values
    SoftmaxState st{-INFINITY, 0.0f};
    for (int i = threadIdx.x * PACK_X; i < full; i += blockDim.x * PACK_X) {
        const Pack<floatX> p = load_pack(x + i);
        for (int k = 0; k < PACK_X; k++) st = softmax_add(st, to_float(p.v[k]));
    }
    for (int i = full + threadIdx.x; i < V; i += blockDim.x) st = softmax_add(st, to_float(x[i]));
    st = block_softmax_merge(st);
    const float x_target = to_float(x[target]);
    if (threadIdx.x == 0) losses[blockIdx.x] = logf(st.s) + st.m - x_target;
    if (!write_grad) return;
    __syncthreads(); // every thread has read x[target] before it is overwritten
    const float inv = 1.0f / st.s;
    for (int i = threadIdx.x * PACK_X; i < Vp; i += blockDim.x * PACK_X) {
        Pack<floatX> p = load_pack(x + i);
        for (int k = 0; k < PACK_X; k++) {
            const int col = i + k;
            const float g = col < V ? (expf(to_float(p.v[k]) - st.m) * inv -
                                       (col == target ? 1.0f : 0.0f)) * scale
                                    : 0.0f;
            p.v[k] = from_float<floatX>(g);
        }
        store_pack(x + i, p);
    }
}

// losses (N) on the device; write_grad: logits become dlogits (scale each)
static inline void crossentropy_cuda(float *losses, floatX *logits, const int *targets, int N,
                                     int V, int Vp, float scale, int write_grad,
                                     cudaStream_t stream) {
    if (Vp % PACK_X != 0) {
        fprintf(stderr, "error: cross-entropy needs the padded vocab %% %d == 0 (16-byte rows), "
                "got Vp=%d\n", PACK_X, Vp);
        exit(EXIT_FAILURE);
    }
    crossentropy_kernel<<<N, CE_THREADS, 0, stream>>>(losses, logits, targets, V, Vp, scale,
                                                      write_grad);
    CUDA_CHECK_LAUNCH();
}

#endif
