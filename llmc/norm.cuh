// LayerNorm and RMSNorm (gain and bias, eps 1e-5) fused with the residual
// add, one warp per row of (N, C), 16-byte accesses; C % PACK_X == 0.
// Same math as llmc/layernorm.c and llmc/rmsnorm.c (docs/math.md section 1).
//   forward:  residual_out = a + b (b may be NULL: then x = a, nothing written),
//             out = g xhat + bias, xhat = (x - mu) rstd (LN) or x rstd (RMS)
//   backward: dresidual += dnorm/dx (dout); gain/bias gradients summed in a
//             fixed order (per-block partials, then norm_partials_reduce).
#ifndef FOLDNORM_NORM_CUH
#define FOLDNORM_NORM_CUH

#include "cuda_common.cuh"

#define NORM_EPS_CUDA 1e-5f
#define NORM_WARPS_PER_BLOCK 4

template <bool LAYER>
__global__ void residual_norm_forward_kernel(floatX *residual_out, floatX *out, float *mean,
                                             float *rstd, const floatX *a, const floatX *b,
                                             const floatX *gain, const floatX *bias, int N, int C) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= N) return;
    const size_t base = (size_t)row * C;
    const floatX *x = b != NULL ? residual_out + base : a + base;
    float sum = 0.0f, sumsq = 0.0f;
    // pass 1: the residual add (rounded to floatX as stored) and the row sums
    for (int c = lane * PACK_X; c < C; c += 32 * PACK_X) {
        Pack<floatX> pa = load_pack(a + base + c);
        if (b != NULL) {
            Pack<floatX> pb = load_pack(b + base + c);
            for (int k = 0; k < PACK_X; k++) {
                pa.v[k] = from_float<floatX>(to_float(pa.v[k]) + to_float(pb.v[k]));
            }
            store_pack(residual_out + base + c, pa);
        }
        for (int k = 0; k < PACK_X; k++) {
            float v = to_float(pa.v[k]);
            sum += v;
            sumsq += v * v;
        }
    }
    float mu = 0.0f;
    if (LAYER) {
        mu = warp_sum(sum) / (float)C;
        // pass 2: two-pass variance, as the CPU code (no cancellation when |mu| >> std)
        sumsq = 0.0f;
        for (int c = lane * PACK_X; c < C; c += 32 * PACK_X) {
            Pack<floatX> px = load_pack(x + c);
            for (int k = 0; k < PACK_X; k++) {
                float d = to_float(px.v[k]) - mu;
                sumsq += d * d;
            }
        }
    }
    const float rs = rsqrtf(warp_sum(sumsq) / (float)C + NORM_EPS_CUDA);
    for (int c = lane * PACK_X; c < C; c += 32 * PACK_X) {
        Pack<floatX> px = load_pack(x + c);
        Pack<floatX> pg = load_pack(gain + c);
        Pack<floatX> pb = load_pack(bias + c);
        Pack<floatX> py;
        for (int k = 0; k < PACK_X; k++) {
            float xhat = (to_float(px.v[k]) - mu) * rs;
            py.v[k] = from_float<floatX>(to_float(pg.v[k]) * xhat + to_float(pb.v[k]));
        }
        store_pack(out + base + c, py);
    }
    if (lane == 0) {
        if (LAYER) mean[row] = mu;
        rstd[row] = rs;
    }
}

template <bool LAYER>
__global__ void norm_backward_kernel(floatX *dresidual, float *partials, const floatX *dout,
                                     const floatX *inp, const floatX *gain, const float *mean,
                                     const float *rstd, int N, int C) {
    extern __shared__ float acc[]; // [warps][2][C]: this warp's gain and bias sums
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    for (int i = threadIdx.x; i < warps * 2 * C; i += blockDim.x) acc[i] = 0.0f;
    __syncthreads();
    float *acc_gain = acc + (size_t)warp * 2 * C;
    float *acc_bias = acc_gain + C;
    for (int row = blockIdx.x * warps + warp; row < N; row += gridDim.x * warps) {
        const size_t base = (size_t)row * C;
        const float mu = LAYER ? mean[row] : 0.0f, rs = rstd[row];
        float dxhat_sum = 0.0f, dxhat_xhat_sum = 0.0f;
        for (int c = lane * PACK_X; c < C; c += 32 * PACK_X) {
            Pack<floatX> px = load_pack(inp + base + c);
            Pack<floatX> pd = load_pack(dout + base + c);
            Pack<floatX> pg = load_pack(gain + c);
            for (int k = 0; k < PACK_X; k++) {
                float xhat = (to_float(px.v[k]) - mu) * rs;
                float dxhat = to_float(pg.v[k]) * to_float(pd.v[k]);
                dxhat_sum += dxhat;
                dxhat_xhat_sum += dxhat * xhat;
            }
        }
        // LN: dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)); RMS drops mean(dxhat)
        const float dxhat_mean = LAYER ? warp_sum(dxhat_sum) / (float)C : 0.0f;
        const float dxhat_xhat_mean = warp_sum(dxhat_xhat_sum) / (float)C;
        for (int c = lane * PACK_X; c < C; c += 32 * PACK_X) {
            Pack<floatX> px = load_pack(inp + base + c);
            Pack<floatX> pd = load_pack(dout + base + c);
            Pack<floatX> pg = load_pack(gain + c);
            Pack<floatX> pr = load_pack(dresidual + base + c);
            for (int k = 0; k < PACK_X; k++) {
                float xhat = (to_float(px.v[k]) - mu) * rs;
                float dy = to_float(pd.v[k]);
                float dx = rs * (to_float(pg.v[k]) * dy - dxhat_mean - xhat * dxhat_xhat_mean);
                pr.v[k] = from_float<floatX>(to_float(pr.v[k]) + dx);
                acc_gain[c + k] += xhat * dy;
                acc_bias[c + k] += dy;
            }
            store_pack(dresidual + base + c, pr);
        }
    }
    __syncthreads();
    // the warps' sums in warp order: this block's partials
    float *block_partials = partials + (size_t)blockIdx.x * 2 * C;
    for (int i = threadIdx.x; i < 2 * C; i += blockDim.x) {
        float s = 0.0f;
        for (int w = 0; w < warps; w++) s += acc[(size_t)w * 2 * C + i];
        block_partials[i] = s;
    }
}

// dgain += sum over blocks of partials[block][0], dbias likewise with [1]
// (fp32 gradients), blocks in order.
__global__ void norm_partials_reduce_kernel(float *dgain, float *dbias, const float *partials,
                                            int blocks, int C) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float g = 0.0f, b = 0.0f;
    for (int k = 0; k < blocks; k++) {
        g += partials[(size_t)k * 2 * C + c];
        b += partials[(size_t)k * 2 * C + C + c];
    }
    dgain[c] += g;
    dbias[c] += b;
}

static inline size_t norm_backward_shared_bytes(int C) {
    return (size_t)NORM_WARPS_PER_BLOCK * 2 * C * sizeof(float);
}

// Grid of the backward kernel: as many blocks as fit on the device at once
// (each loops over its rows), never more than the rows need. A fixed function
// of (N, C, device), so the order of the gain/bias sums is the same every run.
static inline int norm_backward_blocks(bool layer, int N, int C, int num_sms) {
    const int shared = (int)norm_backward_shared_bytes(C);
    int per_sm = 0;
    if (layer) {
        CUDA_CHECK(cudaFuncSetAttribute(norm_backward_kernel<true>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, norm_backward_kernel<true>, 32 * NORM_WARPS_PER_BLOCK, shared));
    } else {
        CUDA_CHECK(cudaFuncSetAttribute(norm_backward_kernel<false>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, norm_backward_kernel<false>, 32 * NORM_WARPS_PER_BLOCK, shared));
    }
    if (per_sm < 1) {
        fprintf(stderr, "error: norm backward: C=%d needs %d bytes of shared memory per block, "
                "more than the device has\n", C, shared);
        exit(EXIT_FAILURE);
    }
    const int needed = ceil_div(N, NORM_WARPS_PER_BLOCK);
    const int cap = per_sm * num_sms;
    return needed < cap ? needed : cap;
}

static inline void check_norm_width(int C) {
    if (C % PACK_X != 0) {
        fprintf(stderr, "error: norm kernels need C %% %d == 0 (16-byte rows), got C=%d\n", PACK_X,
                C);
        exit(EXIT_FAILURE);
    }
}

// residual_out = a + b (if b), out = norm(residual_out or a); mean unused for RMS.
static inline void residual_norm_forward(bool layer, floatX *residual_out, floatX *out,
                                         float *mean, float *rstd, const floatX *a,
                                         const floatX *b, const floatX *gain, const floatX *bias,
                                         int N, int C, cudaStream_t stream) {
    check_norm_width(C);
    const int threads = 32 * NORM_WARPS_PER_BLOCK;
    const int blocks = ceil_div(N, NORM_WARPS_PER_BLOCK);
    if (layer) {
        residual_norm_forward_kernel<true><<<blocks, threads, 0, stream>>>(
            residual_out, out, mean, rstd, a, b, gain, bias, N, C);
    } else {
        residual_norm_forward_kernel<false><<<blocks, threads, 0, stream>>>(
            residual_out, out, mean, rstd, a, b, gain, bias, N, C);
    }
    CUDA_CHECK_LAUNCH();
}

// floats of scratch norm_backward needs for its partials (either kind)
static inline size_t norm_backward_scratch_floats(int N, int C, int num_sms) {
    const size_t ln = (size_t)norm_backward_blocks(true, N, C, num_sms);
    const size_t rms = (size_t)norm_backward_blocks(false, N, C, num_sms);
    return (ln > rms ? ln : rms) * 2 * (size_t)C;
}

// dresidual += norm backward of dout; dgain, dbias (fp32) += their gradients.
static inline void norm_backward(bool layer, floatX *dresidual, float *dgain, float *dbias,
                                 float *scratch, const floatX *dout, const floatX *inp,
                                 const floatX *gain, const float *mean, const float *rstd, int N,
                                 int C, int num_sms, cudaStream_t stream) {
    check_norm_width(C);
    const int threads = 32 * NORM_WARPS_PER_BLOCK;
    const int blocks = norm_backward_blocks(layer, N, C, num_sms); // also sets the shared limit
    const size_t shared = norm_backward_shared_bytes(C);
    if (layer) {
        norm_backward_kernel<true><<<blocks, threads, shared, stream>>>(
            dresidual, scratch, dout, inp, gain, mean, rstd, N, C);
    } else {
        norm_backward_kernel<false><<<blocks, threads, shared, stream>>>(
            dresidual, scratch, dout, inp, gain, mean, rstd, N, C);
    }
    CUDA_CHECK_LAUNCH();
    norm_partials_reduce_kernel<<<ceil_div(C, 256), 256, 0, stream>>>(dgain, dbias, scratch,
                                                                      blocks, C);
    CUDA_CHECK_LAUNCH();
}

#endif
