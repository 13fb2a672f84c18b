// Multi-head attention without (T, T) buffers, causal (GPT-2,
// llmc/kernels/attention.c's math) or bidirectional (ViT, llmc/kernels/attention_bidir.c's
// math without bias or token map; the CAUSAL template switch), flash-style: keys and values stream through shared memory in tiles
// of 32 and each query row keeps a running max m, a running sum l and an
// unnormalised output (online softmax: on a new tile with max m', the old
// terms are rescaled by exp(m - m')). The forward keeps only lse = m + log l
// per row; the backward recomputes p = exp(scale q.k - lse) tile by tile:
//   D_i = dy_i . y_i,  dp_ij = dy_i . v_j,  ds_ij = p_ij (dp_ij - D_i),
//   dq_i = scale sum_j ds_ij k_j,  dk_j = scale sum_i ds_ij q_i,  dv_j = sum_i p_ij dy_i,
// in two kernels (one owns query rows, one owns key rows), so every gradient
// is written once by one thread, in a fixed order: no atomics. A warp works
// on 4 rows, a lane on key (or query) lane of the tile when scoring and on
// dimensions lane, lane+32, ... when accumulating. Head size <= 128.
#ifndef FOLDNORM_FLASH_ATTENTION_CUH
#define FOLDNORM_FLASH_ATTENTION_CUH

#include <math.h>

#include "cuda_common.cuh"
#include "smem_optin.cuh"

#define FA_TILE 32          // keys (forward, dq) or queries (dk, dv) per shared-memory tile
#define FA_WARPS 4
#define FA_ROWS_PER_WARP 4
#define FA_ROWS (FA_WARPS * FA_ROWS_PER_WARP) // the rows one block owns
#define FA_MAX_HS 128
#define FA_DIMS_PER_LANE (FA_MAX_HS / 32)

// lane's share of a row of hs values: dimensions lane + 32 i
#define FA_FOR_DIMS(i, d, hs) \
    for (int i = 0, d = lane; i < FA_DIMS_PER_LANE; i++, d += 32) if (d < (hs))

// rows [0, rows) of hs values starting at src (row stride `stride` in floatX) into
// dst (row stride dst_stride floats), rows at or beyond `valid` as zeros
__device__ inline void fa_load_rows(float *dst, int dst_stride, const floatX *src, size_t stride,
                                    int rows, int valid, int hs) {
    for (int idx = threadIdx.x; idx < rows * hs; idx += blockDim.x) {
        const int r = idx / hs, d = idx % hs;
        dst[r * dst_stride + d] = r < valid ? to_float(src[(size_t)r * stride + d]) : 0.0f;
    }
}

__device__ inline float fa_dot(const float *a, const float *b, int hs) {
    float s = 0.0f;
    for (int d = 0; d < hs; d++) s += a[d] * b[d];
    return s;
}

// grid (ceil(T / FA_ROWS), B NH); out (B, T, C), lse (B, NH, T)
template <bool CAUSAL>
__global__ void flash_attention_forward_kernel(floatX *out, float *lse, const floatX *qkv, int T,
                                               int NH, int hs, float scale) {
    extern __shared__ float smem[];
    float *q_s = smem;                       // (FA_ROWS, hs)
    float *k_s = q_s + FA_ROWS * hs;         // (FA_TILE, hs + 1): lanes read different rows
    float *v_s = k_s + FA_TILE * (hs + 1);   // (FA_TILE, hs)
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int bh = blockIdx.y, b = bh / NH, h = bh % NH, C = NH * hs;
    const size_t stride = 3 * (size_t)C;
    const floatX *base = qkv + (size_t)b * T * stride + (size_t)h * hs;
    const int q0 = blockIdx.x * FA_ROWS;
    const int q_end = min(q0 + FA_ROWS, T);
    fa_load_rows(q_s, hs, base + (size_t)q0 * stride, stride, FA_ROWS, q_end - q0, hs);
    float acc[FA_ROWS_PER_WARP][FA_DIMS_PER_LANE];
    float m_run[FA_ROWS_PER_WARP], l_run[FA_ROWS_PER_WARP];
    for (int rr = 0; rr < FA_ROWS_PER_WARP; rr++) {
        m_run[rr] = -INFINITY;
        l_run[rr] = 0.0f;
        for (int i = 0; i < FA_DIMS_PER_LANE; i++) acc[rr][i] = 0.0f;
    }
    const int k_end = CAUSAL ? q_end : T; // the keys any row of the block sees
    for (int k0 = 0; k0 < k_end; k0 += FA_TILE) {
        const int keys = min(FA_TILE, T - k0);
        __syncthreads(); // the previous tile is consumed
        fa_load_rows(k_s, hs + 1, base + (size_t)k0 * stride + C, stride, FA_TILE, keys, hs);
        fa_load_rows(v_s, hs, base + (size_t)k0 * stride + 2 * C, stride, FA_TILE, keys, hs);
        __syncthreads();
        for (int rr = 0; rr < FA_ROWS_PER_WARP; rr++) {
            const int r = warp * FA_ROWS_PER_WARP + rr, tq = q0 + r;
            if (tq >= T || (CAUSAL && k0 > tq)) continue; // warp-uniform: no key of this tile seen
            const int key = k0 + lane;
            const bool seen = CAUSAL ? key <= tq : key < T; // causal: key <= tq < T
            const float s = seen ? scale * fa_dot(q_s + r * hs, k_s + lane * (hs + 1), hs)
                                 : -INFINITY;
            const float m_new = fmaxf(m_run[rr], warp_max(s)); // key k0 is seen: finite
            const float p = seen ? expf(s - m_new) : 0.0f;
            const float rescale = expf(m_run[rr] - m_new); // 0 on the first tile
            l_run[rr] = l_run[rr] * rescale + warp_sum(p);
            m_run[rr] = m_new;
            for (int i = 0; i < FA_DIMS_PER_LANE; i++) acc[rr][i] *= rescale;
            const int last = CAUSAL ? min(FA_TILE, tq - k0 + 1) : keys;
            for (int j = 0; j < last; j++) {
                const float pj = __shfl_sync(0xffffffffu, p, j);
                FA_FOR_DIMS(i, d, hs) acc[rr][i] += pj * v_s[j * hs + d];
            }
        }
    }
    for (int rr = 0; rr < FA_ROWS_PER_WARP; rr++) {
        const int tq = q0 + warp * FA_ROWS_PER_WARP + rr;
        if (tq >= T) continue;
        const float inv = 1.0f / l_run[rr];
        floatX *o = out + ((size_t)b * T + tq) * C + (size_t)h * hs;
        FA_FOR_DIMS(i, d, hs) o[d] = from_float<floatX>(acc[rr][i] * inv);
        if (lane == 0) lse[(size_t)bh * T + tq] = m_run[rr] + logf(l_run[rr]);
    }
}

// D (B, NH, T) = dy . y per row and head; one warp per (b, h, t)
__global__ void flash_attention_row_dot_kernel(float *D, const floatX *dout, const floatX *out,
                                               int B, int T, int NH, int hs) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; // (b, h, t)
    if (row >= B * NH * T) return;
    const int t = row % T, h = (row / T) % NH, b = row / (T * NH);
    const size_t at = ((size_t)b * T + t) * NH * hs + (size_t)h * hs;
    float s = 0.0f;
    for (int d = lane; d < hs; d += 32) s += to_float(dout[at + d]) * to_float(out[at + d]);
    s = warp_sum(s);
    if (lane == 0) D[row] = s;
}

// dq rows of dqkv; grid (ceil(T / FA_ROWS), B NH): the block owns FA_ROWS query rows
template <bool CAUSAL>
__global__ void flash_attention_backward_dq_kernel(floatX *dqkv, const floatX *dout,
                                                   const floatX *qkv, const float *lse,
                                                   const float *D, int T, int NH, int hs,
                                                   float scale) {
    extern __shared__ float smem[];
    float *q_s = smem;                      // (FA_ROWS, hs)
    float *dy_s = q_s + FA_ROWS * hs;       // (FA_ROWS, hs)
    float *k_s = dy_s + FA_ROWS * hs;       // (FA_TILE, hs + 1)
    float *v_s = k_s + FA_TILE * (hs + 1);  // (FA_TILE, hs + 1)
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int bh = blockIdx.y, b = bh / NH, h = bh % NH, C = NH * hs;
    const size_t stride = 3 * (size_t)C;
    const floatX *base = qkv + (size_t)b * T * stride + (size_t)h * hs;
    const int q0 = blockIdx.x * FA_ROWS;
    const int q_end = min(q0 + FA_ROWS, T);
    fa_load_rows(q_s, hs, base + (size_t)q0 * stride, stride, FA_ROWS, q_end - q0, hs);
    fa_load_rows(dy_s, hs, dout + ((size_t)b * T + q0) * C + (size_t)h * hs, C, FA_ROWS,
                 q_end - q0, hs);
    float dq[FA_ROWS_PER_WARP][FA_DIMS_PER_LANE];
    for (int rr = 0; rr < FA_ROWS_PER_WARP; rr++) {
        for (int i = 0; i < FA_DIMS_PER_LANE; i++) dq[rr][i] = 0.0f;
    }
    const int k_end = CAUSAL ? q_end : T;
    for (int k0 = 0; k0 < k_end; k0 += FA_TILE) {
        const int keys = min(FA_TILE, T - k0);
        __syncthreads();
        fa_load_rows(k_s, hs + 1, base + (size_t)k0 * stride + C, stride, FA_TILE, keys, hs);
        fa_load_rows(v_s, hs + 1, base + (size_t)k0 * stride + 2 * C, stride, FA_TILE, keys, hs);
        __syncthreads();
        for (int rr = 0; rr < FA_ROWS_PER_WARP; rr++) {
            const int r = warp * FA_ROWS_PER_WARP + rr, tq = q0 + r;
            if (tq >= T || (CAUSAL && k0 > tq)) continue;
            const size_t row = (size_t)bh * T + tq;
            const bool seen = CAUSAL ? k0 + lane <= tq : k0 + lane < T;
            float ds = 0.0f;
            if (seen) {
                const float p = expf(scale * fa_dot(q_s + r * hs, k_s + lane * (hs + 1), hs) -
                                     lse[row]);
                const float dp = fa_dot(dy_s + r * hs, v_s + lane * (hs + 1), hs);
                ds = p * (dp - D[row]);
            }
            const int last = CAUSAL ? min(FA_TILE, tq - k0 + 1) : keys;
            for (int j = 0; j < last; j++) {
                const float dsj = __shfl_sync(0xffffffffu, ds, j);
                FA_FOR_DIMS(i, d, hs) dq[rr][i] += dsj * k_s[j * (hs + 1) + d];
            }
        }
    }
    for (int rr = 0; rr < FA_ROWS_PER_WARP; rr++) {
        const int tq = q0 + warp * FA_ROWS_PER_WARP + rr;
        if (tq >= T) continue;
        floatX *g = dqkv + ((size_t)b * T + tq) * stride + (size_t)h * hs;
        FA_FOR_DIMS(i, d, hs) g[d] = from_float<floatX>(scale * dq[rr][i]);
    }
}

// dk and dv rows of dqkv; grid (ceil(T / FA_ROWS), B NH): the block owns FA_ROWS key
// rows and streams the query rows that see them (causal: t >= its first key; else
// all) through shared memory
template <bool CAUSAL>
__global__ void flash_attention_backward_dkdv_kernel(floatX *dqkv, const floatX *dout,
                                                     const floatX *qkv, const float *lse,
                                                     const float *D, int T, int NH, int hs,
                                                     float scale) {
    extern __shared__ float smem[];
    float *k_s = smem;                        // (FA_ROWS, hs)
    float *v_s = k_s + FA_ROWS * hs;          // (FA_ROWS, hs)
    float *q_s = v_s + FA_ROWS * hs;          // (FA_TILE, hs + 1)
    float *dy_s = q_s + FA_TILE * (hs + 1);   // (FA_TILE, hs + 1)
    float *lse_s = dy_s + FA_TILE * (hs + 1); // (FA_TILE)
    float *D_s = lse_s + FA_TILE;             // (FA_TILE)
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int bh = blockIdx.y, b = bh / NH, h = bh % NH, C = NH * hs;
    const size_t stride = 3 * (size_t)C;
    const floatX *base = qkv + (size_t)b * T * stride + (size_t)h * hs;
    const int k_first = blockIdx.x * FA_ROWS;
    const int k_end = min(k_first + FA_ROWS, T);
    fa_load_rows(k_s, hs, base + (size_t)k_first * stride + C, stride, FA_ROWS, k_end - k_first,
                 hs);
    fa_load_rows(v_s, hs, base + (size_t)k_first * stride + 2 * C, stride, FA_ROWS,
                 k_end - k_first, hs);
    float dk[FA_ROWS_PER_WARP][FA_DIMS_PER_LANE], dv[FA_ROWS_PER_WARP][FA_DIMS_PER_LANE];
    for (int rr = 0; rr < FA_ROWS_PER_WARP; rr++) {
        for (int i = 0; i < FA_DIMS_PER_LANE; i++) dk[rr][i] = dv[rr][i] = 0.0f;
    }
    for (int q0 = CAUSAL ? k_first : 0; q0 < T; q0 += FA_TILE) {
        const int queries = min(FA_TILE, T - q0);
        __syncthreads();
        fa_load_rows(q_s, hs + 1, base + (size_t)q0 * stride, stride, FA_TILE, queries, hs);
        fa_load_rows(dy_s, hs + 1, dout + ((size_t)b * T + q0) * C + (size_t)h * hs, C, FA_TILE,
                     queries, hs);
        if (threadIdx.x < FA_TILE) {
            const bool in = (int)threadIdx.x < queries;
            lse_s[threadIdx.x] = in ? lse[(size_t)bh * T + q0 + threadIdx.x] : 0.0f;
            D_s[threadIdx.x] = in ? D[(size_t)bh * T + q0 + threadIdx.x] : 0.0f;
        }
        __syncthreads();
        for (int rr = 0; rr < FA_ROWS_PER_WARP; rr++) {
            const int r = warp * FA_ROWS_PER_WARP + rr, tk = k_first + r;
            if (tk >= T) continue;
            const int tq = q0 + lane;
            const bool sees = lane < queries && (!CAUSAL || tq >= tk); // query tq attends to key tk
            float p = 0.0f, ds = 0.0f;
            if (sees) {
                p = expf(scale * fa_dot(q_s + lane * (hs + 1), k_s + r * hs, hs) - lse_s[lane]);
                const float dp = fa_dot(dy_s + lane * (hs + 1), v_s + r * hs, hs);
                ds = p * (dp - D_s[lane]);
            }
            // queries before tk contribute nothing: start at the first that sees tk
            for (int j = CAUSAL ? max(0, tk - q0) : 0; j < queries; j++) {
                const float pj = __shfl_sync(0xffffffffu, p, j);
                const float dsj = __shfl_sync(0xffffffffu, ds, j);
                FA_FOR_DIMS(i, d, hs) {
                    dv[rr][i] += pj * dy_s[j * (hs + 1) + d];
                    dk[rr][i] += dsj * q_s[j * (hs + 1) + d];
                }
            }
        }
    }
    for (int rr = 0; rr < FA_ROWS_PER_WARP; rr++) {
        const int tk = k_first + warp * FA_ROWS_PER_WARP + rr;
        if (tk >= T) continue;
        floatX *g = dqkv + ((size_t)b * T + tk) * stride + (size_t)h * hs;
        FA_FOR_DIMS(i, d, hs) {
            g[C + d] = from_float<floatX>(scale * dk[rr][i]);
            g[2 * C + d] = from_float<floatX>(dv[rr][i]);
        }
    }
}

// dynamic shared memory of each kernel for head size hs
static inline size_t fa_forward_smem_bytes(int hs) {
    return sizeof(float) *
           ((size_t)FA_ROWS * hs + (size_t)FA_TILE * (hs + 1) + (size_t)FA_TILE * hs);
}
static inline size_t fa_backward_smem_bytes(int hs) {
    return sizeof(float) *
           (2 * (size_t)FA_ROWS * hs + 2 * (size_t)FA_TILE * (hs + 1) + 2 * (size_t)FA_TILE);
}

static inline void fa_check_shape(int C, int NH) {
    if (NH <= 0 || C % NH != 0 || C / NH > FA_MAX_HS) {
        fprintf(stderr,
                "error: flash attention needs C %% NH == 0 and head size <= %d (C=%d NH=%d)\n",
                FA_MAX_HS, C, NH);
        exit(EXIT_FAILURE);
    }
}

// out (B, T, C) and lse (B, NH, T) from qkv (B, T, 3C)
template <bool CAUSAL>
static inline void flash_attention_forward_any(floatX *out, float *lse, const floatX *qkv, int B,
                                               int T, int C, int NH, cudaStream_t stream) {
    fa_check_shape(C, NH);
    const int hs = C / NH;
    const size_t smem = fa_forward_smem_bytes(hs);
    smem_optin(flash_attention_forward_kernel<CAUSAL>, smem, "flash attention");
    dim3 grid(ceil_div(T, FA_ROWS), B * NH);
    flash_attention_forward_kernel<CAUSAL><<<grid, FA_WARPS * 32, smem, stream>>>(
        out, lse, qkv, T, NH, hs, 1.0f / sqrtf((float)hs));
    CUDA_CHECK_LAUNCH();
}

// dqkv (B, T, 3C), overwritten, from dout (B, T, C), the forward's out and lse;
// D: B NH T floats of scratch
template <bool CAUSAL>
static inline void flash_attention_backward_any(floatX *dqkv, float *D, const floatX *dout,
                                                const floatX *out, const floatX *qkv,
                                                const float *lse, int B, int T, int C, int NH,
                                                cudaStream_t stream) {
    fa_check_shape(C, NH);
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    flash_attention_row_dot_kernel<<<ceil_div((long long)B * NH * T, 4), 128, 0, stream>>>(
        D, dout, out, B, T, NH, hs);
    CUDA_CHECK_LAUNCH();
    const size_t smem = fa_backward_smem_bytes(hs);
    smem_optin(flash_attention_backward_dq_kernel<CAUSAL>, smem, "flash attention");
    smem_optin(flash_attention_backward_dkdv_kernel<CAUSAL>, smem, "flash attention");
    dim3 grid(ceil_div(T, FA_ROWS), B * NH);
    flash_attention_backward_dq_kernel<CAUSAL><<<grid, FA_WARPS * 32, smem, stream>>>(
        dqkv, dout, qkv, lse, D, T, NH, hs, scale);
    CUDA_CHECK_LAUNCH();
    flash_attention_backward_dkdv_kernel<CAUSAL><<<grid, FA_WARPS * 32, smem, stream>>>(
        dqkv, dout, qkv, lse, D, T, NH, hs, scale);
    CUDA_CHECK_LAUNCH();
}

// GPT-2's causal attention
static inline void flash_attention_forward_cuda(floatX *out, float *lse, const floatX *qkv, int B,
                                                int T, int C, int NH, cudaStream_t stream) {
    flash_attention_forward_any<true>(out, lse, qkv, B, T, C, NH, stream);
}
static inline void flash_attention_backward_cuda(floatX *dqkv, float *D, const floatX *dout,
                                                 const floatX *out, const floatX *qkv,
                                                 const float *lse, int B, int T, int C, int NH,
                                                 cudaStream_t stream) {
    flash_attention_backward_any<true>(dqkv, D, dout, out, qkv, lse, B, T, C, NH, stream);
}

#endif
