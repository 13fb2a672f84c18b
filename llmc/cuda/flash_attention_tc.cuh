// Multi-head attention on tensor cores, flash-style: the math, layouts and
// masks of flash_attention.cuh (causal for GPT-2, llmc/kernels/attention.c;
// bidirectional for ViT, llmc/kernels/attention_bidir.c without bias), with
// every product a bf16 mma.m16n8k16 with fp32 accumulators (mma.cuh through
// attention_tc_warp.cuh): S = Q K^T, O = P V in the forward, which keeps only
// lse = m + log l per row (no (T, T) buffer); in the backward
//   dP = dO V^T, dS = P (dP - D), D_i = dO_i . O_i,
//   dQ = scale dS K (one kernel owns the query rows),
//   dK = scale dS^T Q, dV = P^T dO (one kernel owns the key rows and
//   recomputes S^T = K Q^T and dP^T = V dO^T, so no transpose is needed),
// every gradient written once by one lane, summed in a fixed order: no
// atomics. Blocks have 4 warps. Forward: a block owns 128 query rows (a
// warp 32, as two 16-row strips that share every K and V fragment) and the
// keys stream through a double-buffered shared tile (64 keys, 32 at head
// size 128), loaded with cp.async while the previous tile is used.
// Backward: a block owns 64 rows (a warp 16); the other operand streams
// through shared memory in tiles (64, or 32 at head size 128, for registers). The head size is padded with zero
// features to D = 16, 32, 64 or 128 (so hs 8 or 48 run too); hs <= 128.
// P and dS are rounded to bf16 as the A operands of their products.
#ifndef FOLDNORM_FLASH_ATTENTION_TC_CUH
#define FOLDNORM_FLASH_ATTENTION_TC_CUH

#include "attention_tc_warp.cuh"
#include "flash_attention.cuh" // flash_attention_row_dot_kernel (D = dy . y)

#define TC_ROWS 64      // query rows (dq) or key rows (dk, dv) of a backward block: 4 warps x 16
#define TC_FWD_ROWS 128 // query rows of a forward block: 4 warps x 32

// keys of a shared tile in the forward (32 at head size 128: registers)
__host__ __device__ constexpr int tc_forward_keys(int D) { return D > 64 ? 32 : 64; }

// keys (dq) or queries (dk, dv) of a shared tile in the backward
__host__ __device__ constexpr int tc_backward_tile(int D) { return D > 64 ? 32 : 64; }

__device__ inline int tc_chunks16(int n) { return (n + 15) / 16; }

// grid (ceil(T / 128), B NH); out (B, T, C), lse (B, NH, T). A warp owns 32
// query rows (two strips sharing each K and V fragment); the K/V tiles are
// double-buffered: tile j + 1 loads with cp.async while tile j is used, one
// __syncthreads a tile. Q stays in registers for D <= 64 (from shared memory
// at each tile for D = 128, where the registers go to O).
template <int D, bool CAUSAL>
__global__ void __launch_bounds__(TC_THREADS)
    flash_attention_tc_forward_kernel(floatX *out, float *lse, const floatX *qkv, int T, int NH,
                                      int hs, float scale) {
    // rows padded by 16 bytes: ldmatrix without bank conflicts
    constexpr int LD = D + 8, BK = tc_forward_keys(D);
    constexpr bool Q_IN_REGISTERS = D <= 64;
    extern __shared__ __align__(16) __nv_bfloat16 tc_smem[];
    // Q (128 rows), then two buffers of a K tile and a V tile (BK rows each)
    __nv_bfloat16 *q_s = tc_smem, *kv_s = q_s + TC_FWD_ROWS * LD;
    const int warp = threadIdx.x / 32;
    const int bh = blockIdx.y, b = bh / NH, h = bh % NH, C = NH * hs;
    const size_t stride = 3 * (size_t)C;
    const floatX *base = qkv + (size_t)b * T * stride + (size_t)h * hs;
    const int q0 = blockIdx.x * TC_FWD_ROWS, r0 = q0 + 32 * warp; // the block's, the warp's first query
    const int k_end = CAUSAL ? min(q0 + TC_FWD_ROWS, T) : T; // the keys any row of the block sees
    const int tiles = (k_end + BK - 1) / BK;
    auto load_tile = [&](int j) { // K and V of keys j BK .. into buffer j % 2
        const int k0 = j * BK, keys = min(BK, T - k0);
        __nv_bfloat16 *k_s = kv_s + (j % 2) * 2 * BK * LD;
        tc_load_rows_async<D>(k_s, LD, BK, keys, hs,
                              [&](int r) { return base + (size_t)(k0 + r) * stride + C; });
        tc_load_rows_async<D>(k_s + BK * LD, LD, BK, keys, hs,
                              [&](int r) { return base + (size_t)(k0 + r) * stride + 2 * C; });
    };
    tc_load_rows_async<D>(q_s, LD, TC_FWD_ROWS, min(TC_FWD_ROWS, T - q0), hs,
                          [&](int r) { return base + (size_t)(q0 + r) * stride; });
    load_tile(0);
    cp_async_commit_group();
    const __nv_bfloat16 *q_strip = q_s + 32 * warp * LD;
    MmaFragA qa[2][Q_IN_REGISTERS ? D / 16 : 1] = {}; // set at the first tile
    auto q_frag = [&](int m, int kc) {
        if constexpr (Q_IN_REGISTERS) return qa[m][kc];
        else return mma_load_a(q_strip + 16 * m * LD + kc * 16, LD);
    };
    TcRowState<D> st[2];
    tc_row_state_init(st[0]);
    tc_row_state_init(st[1]);
    for (int j = 0; j < tiles; j++) {
        cp_async_wait_group<0>(); // this thread's copies of tile j (and, first, of Q) landed
        __syncthreads(); // everyone's landed, and tile j - 1 is consumed: its buffer is free
        if (j + 1 < tiles) {
            load_tile(j + 1);
            cp_async_commit_group();
        }
        if constexpr (Q_IN_REGISTERS) {
            if (j == 0) {
                TC_UNROLL for (int m = 0; m < 2; m++) tc_load_strip<D>(qa[m], q_strip + 16 * m * LD, LD);
            }
        }
        const int k0 = j * BK, keys = min(BK, T - k0);
        if (r0 >= T || (CAUSAL && k0 > r0 + 31)) continue; // warp-uniform: no row of the warp sees a key
        // causal: keys past the warp's last row are all masked, their 16-key chunks skipped
        const int seen = CAUSAL ? min(keys, r0 + 32 - k0) : keys;
        const __nv_bfloat16 *k_s = kv_s + (j % 2) * 2 * BK * LD;
        tc_pair_online_step<D, BK / 8>(st, q_frag, k_s, k_s + BK * LD, LD, tc_chunks16(seen),
                                       [&](float s, int row, int key) {
                                           const int tq = r0 + row, tk = k0 + key;
                                           return tk < T && (!CAUSAL || tk <= tq) ? s * scale : -INFINITY;
                                       });
    }
    const int lane = mma_lane_id();
    TC_UNROLL for (int m = 0; m < 2; m++) {
        const int rm = r0 + 16 * m;
        float l[2], inv[2];
        for (int i = 0; i < 2; i++) {
            l[i] = tc_quad_sum(st[m].l[i]);
            inv[i] = 1.0f / l[i];
        }
        tc_store_strip<D>(st[m].o, inv, T - rm, hs, [&](int r) {
            return out + ((size_t)b * T + rm + r) * C + (size_t)h * hs;
        });
        for (int i = 0; i < 2; i++) {
            const int tq = rm + lane / 4 + 8 * i;
            if (lane % 4 == 0 && tq < T) lse[(size_t)bh * T + tq] = st[m].m[i] + logf(l[i]);
        }
    }
}

// dq rows of dqkv; grid (ceil(T / 64), B NH): the block owns 64 query rows
// and streams the keys they see
template <int D, bool CAUSAL>
__global__ void __launch_bounds__(TC_THREADS)
    flash_attention_tc_backward_dq_kernel(floatX *dqkv, const floatX *dout, const floatX *qkv,
                                          const float *lse, const float *Dsum, int T, int NH,
                                          int hs, float scale) {
    constexpr int LD = D + 8, BK = tc_backward_tile(D);
    extern __shared__ __align__(16) __nv_bfloat16 tc_smem[];
    __nv_bfloat16 *q_s = tc_smem, *dy_s = q_s + TC_ROWS * LD, *k_s = dy_s + TC_ROWS * LD;
    __nv_bfloat16 *v_s = k_s + BK * LD;
    const int warp = threadIdx.x / 32, lane = mma_lane_id();
    const int bh = blockIdx.y, b = bh / NH, h = bh % NH, C = NH * hs;
    const size_t stride = 3 * (size_t)C;
    const floatX *base = qkv + (size_t)b * T * stride + (size_t)h * hs;
    const int q0 = blockIdx.x * TC_ROWS, r0 = q0 + 16 * warp;
    const int rows = min(TC_ROWS, T - q0);
    tc_load_rows<D>(q_s, LD, TC_ROWS, rows, hs, [&](int r) { return base + (size_t)(q0 + r) * stride; });
    tc_load_rows<D>(dy_s, LD, TC_ROWS, rows, hs, [&](int r) {
        return dout + ((size_t)b * T + q0 + r) * C + (size_t)h * hs;
    });
    __syncthreads();
    MmaFragA qa[D / 16], dya[D / 16];
    tc_load_strip<D>(qa, q_s + 16 * warp * LD, LD);
    tc_load_strip<D>(dya, dy_s + 16 * warp * LD, LD);
    float row_lse[2], row_D[2]; // of the lane's rows lane/4 and lane/4 + 8
    for (int i = 0; i < 2; i++) {
        const int tq = r0 + lane / 4 + 8 * i;
        row_lse[i] = tq < T ? lse[(size_t)bh * T + tq] : 0.0f;
        row_D[i] = tq < T ? Dsum[(size_t)bh * T + tq] : 0.0f;
    }
    MmaFragC dq[D / 8];
    TC_UNROLL for (int nt = 0; nt < D / 8; nt++) dq[nt] = MmaFragC{};
    const int k_end = CAUSAL ? min(q0 + TC_ROWS, T) : T;
    for (int k0 = 0; k0 < k_end; k0 += BK) {
        const int keys = min(BK, T - k0);
        __syncthreads();
        tc_load_rows<D>(k_s, LD, BK, keys, hs,
                        [&](int r) { return base + (size_t)(k0 + r) * stride + C; });
        tc_load_rows<D>(v_s, LD, BK, keys, hs,
                        [&](int r) { return base + (size_t)(k0 + r) * stride + 2 * C; });
        __syncthreads();
        if (r0 >= T || (CAUSAL && k0 > r0 + 15)) continue;
        const int k16 = tc_chunks16(CAUSAL ? min(keys, r0 + 16 - k0) : keys);
        MmaFragC s[BK / 8], dp[BK / 8];
        tc_scores<D, BK / 8>(s, qa, k_s, LD, 2 * k16);   // S = Q K^T
        tc_scores<D, BK / 8>(dp, dya, v_s, LD, 2 * k16); // dP = dO V^T
        TC_UNROLL for (int nt = 0; nt < BK / 8; nt++) {
            TC_UNROLL for (int e = 0; e < 4; e++) {
                const int tq = r0 + mma_c_row(lane, e), tk = k0 + nt * 8 + mma_c_col(lane, e);
                const bool seen = tq < T && tk < T && (!CAUSAL || tk <= tq);
                const float p = seen ? expf(s[nt].r[e] * scale - row_lse[e / 2]) : 0.0f;
                s[nt].r[e] = p * (dp[nt].r[e] - row_D[e / 2]); // dS
            }
        }
        tc_accumulate<D, BK / 8>(dq, s, k_s, LD, k16); // dQ += dS K
    }
    const float f[2] = {scale, scale};
    tc_store_strip<D>(dq, f, T - r0, hs, [&](int r) {
        return dqkv + ((size_t)b * T + r0 + r) * stride + (size_t)h * hs;
    });
}

// dk and dv rows of dqkv; grid (ceil(T / 64), B NH): the block owns 64 key
// rows and streams the queries that see them (causal: from its first key on)
template <int D, bool CAUSAL>
__global__ void __launch_bounds__(TC_THREADS)
    flash_attention_tc_backward_dkdv_kernel(floatX *dqkv, const floatX *dout, const floatX *qkv,
                                            const float *lse, const float *Dsum, int T, int NH,
                                            int hs, float scale) {
    constexpr int LD = D + 8, BQ = tc_backward_tile(D);
    extern __shared__ __align__(16) __nv_bfloat16 tc_smem[];
    __nv_bfloat16 *k_s = tc_smem, *v_s = k_s + TC_ROWS * LD, *q_s = v_s + TC_ROWS * LD;
    __nv_bfloat16 *dy_s = q_s + BQ * LD;
    float *lse_s = (float *)(dy_s + BQ * LD), *D_s = lse_s + BQ; // (BQ) each
    const int warp = threadIdx.x / 32, lane = mma_lane_id();
    const int bh = blockIdx.y, b = bh / NH, h = bh % NH, C = NH * hs;
    const size_t stride = 3 * (size_t)C;
    const floatX *base = qkv + (size_t)b * T * stride + (size_t)h * hs;
    const int k_first = blockIdx.x * TC_ROWS, kr0 = k_first + 16 * warp; // the block's, the warp's first key
    const int rows = min(TC_ROWS, T - k_first);
    tc_load_rows<D>(k_s, LD, TC_ROWS, rows, hs,
                    [&](int r) { return base + (size_t)(k_first + r) * stride + C; });
    tc_load_rows<D>(v_s, LD, TC_ROWS, rows, hs,
                    [&](int r) { return base + (size_t)(k_first + r) * stride + 2 * C; });
    MmaFragC dk[D / 8], dv[D / 8];
    TC_UNROLL for (int nt = 0; nt < D / 8; nt++) dk[nt] = dv[nt] = MmaFragC{};
    for (int q0 = CAUSAL ? k_first : 0; q0 < T; q0 += BQ) {
        const int queries = min(BQ, T - q0);
        __syncthreads(); // the previous tile is consumed (the first time: k_s, v_s are written)
        tc_load_rows<D>(q_s, LD, BQ, queries, hs, [&](int r) { return base + (size_t)(q0 + r) * stride; });
        tc_load_rows<D>(dy_s, LD, BQ, queries, hs, [&](int r) {
            return dout + ((size_t)b * T + q0 + r) * C + (size_t)h * hs;
        });
        for (int i = threadIdx.x; i < BQ; i += blockDim.x) {
            lse_s[i] = i < queries ? lse[(size_t)bh * T + q0 + i] : 0.0f;
            D_s[i] = i < queries ? Dsum[(size_t)bh * T + q0 + i] : 0.0f;
        }
        __syncthreads();
        if (kr0 >= T || (CAUSAL && q0 + BQ - 1 < kr0)) continue; // no query of the tile sees the strip
        // K and V of the strip as A operands (reloaded per tile: registers go to the sums)
        MmaFragA ka[D / 16], va[D / 16];
        tc_load_strip<D>(ka, k_s + 16 * warp * LD, LD);
        tc_load_strip<D>(va, v_s + 16 * warp * LD, LD);
        const int q16 = tc_chunks16(queries);
        MmaFragC s[BQ / 8], dp[BQ / 8]; // S^T = K Q^T, dP^T = V dO^T: rows are keys, columns queries
        tc_scores<D, BQ / 8>(s, ka, q_s, LD, 2 * q16);
        tc_scores<D, BQ / 8>(dp, va, dy_s, LD, 2 * q16);
        TC_UNROLL for (int nt = 0; nt < BQ / 8; nt++) {
            TC_UNROLL for (int e = 0; e < 4; e++) {
                const int tk = kr0 + mma_c_row(lane, e), q = nt * 8 + mma_c_col(lane, e);
                const bool seen = q < queries && tk < T && (!CAUSAL || q0 + q >= tk);
                const float p = seen ? expf(s[nt].r[e] * scale - lse_s[q]) : 0.0f;
                s[nt].r[e] = p;                         // P^T
                dp[nt].r[e] = p * (dp[nt].r[e] - D_s[q]); // dS^T
            }
        }
        tc_accumulate<D, BQ / 8>(dv, s, dy_s, LD, q16); // dV += P^T dO
        tc_accumulate<D, BQ / 8>(dk, dp, q_s, LD, q16); // dK += dS^T Q
    }
    const float fk[2] = {scale, scale}, fv[2] = {1.0f, 1.0f};
    tc_store_strip<D>(dk, fk, T - kr0, hs, [&](int r) {
        return dqkv + ((size_t)b * T + kr0 + r) * stride + C + (size_t)h * hs;
    });
    tc_store_strip<D>(dv, fv, T - kr0, hs, [&](int r) {
        return dqkv + ((size_t)b * T + kr0 + r) * stride + 2 * C + (size_t)h * hs;
    });
}

// dynamic shared memory of each kernel for the padded head size D
static inline size_t tc_forward_smem_bytes(int D) {
    return sizeof(__nv_bfloat16) * (size_t)(TC_FWD_ROWS + 4 * tc_forward_keys(D)) * (D + 8);
}
static inline size_t tc_backward_smem_bytes(int D) {
    const size_t tile = tc_backward_tile(D);
    return sizeof(__nv_bfloat16) * (2 * TC_ROWS + 2 * tile) * (D + 8) + sizeof(float) * 2 * tile;
}

static inline int tc_check_shape(int C, int NH) {
    const int D = NH > 0 && C % NH == 0 ? tc_padded_head(C / NH) : 0;
    if (D == 0) {
        fprintf(stderr,
                "error: tensor-core attention needs C %% NH == 0 and head size <= %d (C=%d NH=%d)\n",
                TC_MAX_HS, C, NH);
        exit(EXIT_FAILURE);
    }
    return D;
}

template <int D, bool CAUSAL>
static inline void flash_attention_tc_forward_d(floatX *out, float *lse, const floatX *qkv, int B,
                                                int T, int C, int NH, cudaStream_t stream) {
    const int hs = C / NH;
    const size_t smem = tc_forward_smem_bytes(D);
    smem_optin(flash_attention_tc_forward_kernel<D, CAUSAL>, smem, "tensor-core attention");
    dim3 grid(ceil_div(T, TC_FWD_ROWS), B * NH);
    flash_attention_tc_forward_kernel<D, CAUSAL><<<grid, TC_THREADS, smem, stream>>>(
        out, lse, qkv, T, NH, hs, 1.0f / sqrtf((float)hs));
    CUDA_CHECK_LAUNCH();
}

template <int D, bool CAUSAL>
static inline void flash_attention_tc_backward_d(floatX *dqkv, const float *Dsum,
                                                 const floatX *dout, const floatX *qkv,
                                                 const float *lse, int B, int T, int C, int NH,
                                                 cudaStream_t stream) {
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    const size_t smem = tc_backward_smem_bytes(D);
    smem_optin(flash_attention_tc_backward_dq_kernel<D, CAUSAL>, smem, "tensor-core attention");
    smem_optin(flash_attention_tc_backward_dkdv_kernel<D, CAUSAL>, smem, "tensor-core attention");
    dim3 grid(ceil_div(T, TC_ROWS), B * NH);
    flash_attention_tc_backward_dq_kernel<D, CAUSAL><<<grid, TC_THREADS, smem, stream>>>(
        dqkv, dout, qkv, lse, Dsum, T, NH, hs, scale);
    CUDA_CHECK_LAUNCH();
    flash_attention_tc_backward_dkdv_kernel<D, CAUSAL><<<grid, TC_THREADS, smem, stream>>>(
        dqkv, dout, qkv, lse, Dsum, T, NH, hs, scale);
    CUDA_CHECK_LAUNCH();
}

// out (B, T, C) and lse (B, NH, T) from qkv (B, T, 3C)
template <bool CAUSAL>
static inline void flash_attention_tc_forward(floatX *out, float *lse, const floatX *qkv, int B,
                                              int T, int C, int NH, cudaStream_t stream) {
    switch (tc_check_shape(C, NH)) {
    case 16: flash_attention_tc_forward_d<16, CAUSAL>(out, lse, qkv, B, T, C, NH, stream); break;
    case 32: flash_attention_tc_forward_d<32, CAUSAL>(out, lse, qkv, B, T, C, NH, stream); break;
    case 64: flash_attention_tc_forward_d<64, CAUSAL>(out, lse, qkv, B, T, C, NH, stream); break;
    default: flash_attention_tc_forward_d<128, CAUSAL>(out, lse, qkv, B, T, C, NH, stream); break;
    }
}

// dqkv (B, T, 3C), overwritten, from dout (B, T, C), the forward's out and lse;
// Dsum: B NH T floats of scratch
template <bool CAUSAL>
static inline void flash_attention_tc_backward(floatX *dqkv, float *Dsum, const floatX *dout,
                                               const floatX *out, const floatX *qkv,
                                               const float *lse, int B, int T, int C, int NH,
                                               cudaStream_t stream) {
    const int D = tc_check_shape(C, NH), hs = C / NH;
    flash_attention_row_dot_kernel<<<ceil_div((long long)B * NH * T, 4), 128, 0, stream>>>(
        Dsum, dout, out, B, T, NH, hs);
    CUDA_CHECK_LAUNCH();
    switch (D) {
    case 16: flash_attention_tc_backward_d<16, CAUSAL>(dqkv, Dsum, dout, qkv, lse, B, T, C, NH, stream); break;
    case 32: flash_attention_tc_backward_d<32, CAUSAL>(dqkv, Dsum, dout, qkv, lse, B, T, C, NH, stream); break;
    case 64: flash_attention_tc_backward_d<64, CAUSAL>(dqkv, Dsum, dout, qkv, lse, B, T, C, NH, stream); break;
    default: flash_attention_tc_backward_d<128, CAUSAL>(dqkv, Dsum, dout, qkv, lse, B, T, C, NH, stream); break;
    }
}

#endif
