// LayerNorm and RMSNorm (gain and bias, eps 1e-5) fused with the residual
// add, one warp per row of (N, C), 16-byte accesses; C % PACK_X == 0.
// Same math as llmc/kernels/norm.c (docs/math.md section 1).
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
    // [warps][2][C]: this warp's gain and bias sums, each C floats stored
    // k-major (norm_acc_index): the lanes of a warp add to consecutive words
    // (the c-major layout had lane l at l * PACK_X: an 8-way bank conflict)
    extern __shared__ float acc[];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    const int packs = C / PACK_X;
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
                acc_gain[k * packs + c / PACK_X] += xhat * dy;
                acc_bias[k * packs + c / PACK_X] += dy;
            }
            store_pack(dresidual + base + c, pr);
        }
    }
    __syncthreads();
    // the warps' sums in warp order: this block's partials, column-major
    // again (column i of the gain sums is at k-major index (i % PACK_X) *
    // packs + i / PACK_X)
    float *block_partials = partials + (size_t)blockIdx.x * 2 * C;
    for (int i = threadIdx.x; i < 2 * C; i += blockDim.x) {
        const int half = i / C, col = i % C;
        const int j = half * C + (col % PACK_X) * packs + col / PACK_X;
        float s = 0.0f;
        for (int w = 0; w < warps; w++) s += acc[(size_t)w * 2 * C + j];
        block_partials[i] = s;
    }
}

// dgain += sum over blocks of partials[block][0][c], dbias likewise with
// [1]: a (32 x NORM_REDUCE_GROUPS) block per 32 columns of one half; thread
// (x, y) sums blocks y, y + GROUPS, ... of column x in order (the reads of a
// warp: 32 consecutive floats), then thread y = 0 adds the GROUPS sums in
// order. A fixed order for a given block count: the same sums every run.
// (One thread per column over ~1,000 blocks was ~90 us a call at d12.)
#define NORM_REDUCE_GROUPS 16
__global__ void norm_partials_reduce_kernel(float *dgain, float *dbias, const float *partials,
                                            int blocks, int C) {
    __shared__ float sums[NORM_REDUCE_GROUPS][32];
    const int c = blockIdx.x * 32 + threadIdx.x, half = blockIdx.y;
    float s = 0.0f;
    if (c < C) {
        for (int k = threadIdx.y; k < blocks; k += NORM_REDUCE_GROUPS) {
            s += partials[(size_t)k * 2 * C + (size_t)half * C + c];
        }
    }
    sums[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y != 0 || c >= C) return;
    float total = 0.0f;
    for (int g = 0; g < NORM_REDUCE_GROUPS; g++) total += sums[g][threadIdx.x];
    float *dst = half == 0 ? dgain : dbias;
    dst[c] += total;
}

static inline size_t norm_backward_shared_bytes(int C) {
    return (size_t)NORM_WARPS_PER_BLOCK * 2 * C * sizeof(float);
}

// Blocks of the backward kernel that fit on one SM at width C. The occupancy
// query and the shared-memory opt-in cost host time, so each (kind, C,
// device) asks once per host thread (an emulated rank is a thread) and every
// later call reuses the answer: a training step makes neither call. The
// kernel's shared-memory limit on a device only grows (to the largest C
// asked), so a width asked later never lowers it under an earlier one's.
static inline int norm_backward_per_sm(bool layer, int C) {
    struct Entry {
        int device, layer, C, per_sm;
    };
    static thread_local Entry entries[32];
    static thread_local int count = 0;
    static thread_local int limit_bytes[2][16]; // the limit set, per kind and device (0: none)
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    for (int i = 0; i < count; i++) {
        const Entry &e = entries[i];
        if (e.device == device && e.layer == (int)layer && e.C == C) return e.per_sm;
    }
    const int shared = (int)norm_backward_shared_bytes(C);
    int *limit = device < 16 ? &limit_bytes[layer][device] : NULL; // past 16 devices: always set
    if (limit == NULL || *limit < shared) {
        if (layer) {
            CUDA_CHECK(cudaFuncSetAttribute(norm_backward_kernel<true>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
        } else {
            CUDA_CHECK(cudaFuncSetAttribute(norm_backward_kernel<false>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
        }
        if (limit != NULL) *limit = shared;
    }
    int per_sm = 0;
    if (layer) {
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, norm_backward_kernel<true>, 32 * NORM_WARPS_PER_BLOCK, shared));
    } else {
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, norm_backward_kernel<false>, 32 * NORM_WARPS_PER_BLOCK, shared));
    }
    if (per_sm < 1) {
        fprintf(stderr, "error: norm backward: C=%d needs %d bytes of shared memory per block, "
                "more than the device has\n", C, shared);
        exit(EXIT_FAILURE);
    }
    if (count < (int)(sizeof(entries) / sizeof(entries[0]))) {
        entries[count++] = {device, (int)layer, C, per_sm};
    }
    return per_sm;
}

// Grid of the backward kernel: as many blocks as fit on the device at once
// (each loops over its rows), never more than the rows need. A fixed function
// of (N, C, device), so the order of the gain/bias sums is the same every run.
static inline int norm_backward_blocks(bool layer, int N, int C, int num_sms) {
    const int needed = ceil_div(N, NORM_WARPS_PER_BLOCK);
    const int cap = norm_backward_per_sm(layer, C) * num_sms;
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
    norm_partials_reduce_kernel<<<dim3(ceil_div(C, 32), 2), dim3(32, NORM_REDUCE_GROUPS), 0,
                                  stream>>>(dgain, dbias, scratch, blocks, C);
    CUDA_CHECK_LAUNCH();
}

#endif
