// Multi-head attention on tensor cores, flash-style: the math, layouts and
// masks of flash_attention.cuh (causal for GPT-2, llmc/kernels/attention.c;
// bidirectional for ViT, llmc/kernels/attention_bidir.c without bias), with
// every product a bf16 mma.m16n8k16 with fp32 accumulators (mma.cuh through
// attention_tc_warp.cuh): S = Q K^T, O = P V in the forward, which keeps only
// lse = m + log l per row (no (T, T) buffer); in the backward
//   dP = dO V^T, dS = P (dP - D), D_i = dO_i . O_i,
//   dK = scale dS^T Q, dV = P^T dO, dQ = scale dS K: one kernel owns the key
//   rows, computes S^T = K Q^T and dP^T = V dO^T once a tile (no transpose
//   needed) and writes each key block's dQ part, which a second kernel sums,
// every gradient written once by one lane, summed in a fixed order: no
// atomics. Forward: a block of 4 warps owns 128 query rows (a warp 32, as
// two 16-row strips that share every K and V fragment) and the keys stream
// through a double-buffered shared tile (64 keys, 32 at head size 128),
// loaded with cp.async while the previous tile is used. Backward: a block of
// 8 warps owns 128 keys (a warp 16) and streams 32-query tiles the same way. The head size is padded with zero
// features to D = 16, 32, 64 or 128 (so hs 8 or 48 run too); hs <= 128.
// P and dS are rounded to bf16 as the A operands of their products.
#ifndef FOLDNORM_FLASH_ATTENTION_TC_CUH
#define FOLDNORM_FLASH_ATTENTION_TC_CUH

#include "attention_tc_warp.cuh"
#include "flash_attention.cuh" // flash_attention_row_dot_kernel (D = dy . y)

#define TC_FWD_ROWS 128 // query rows of a forward block: 4 warps x 32

// keys of a shared tile in the forward (32 at head size 128: registers)
__host__ __device__ constexpr int tc_forward_keys(int D) { return D > 64 ? 32 : 64; }

// keys (dq) or queries (dk, dv) of a shared tile in the backward

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

// The backward: one kernel owns a block of TC_BWD_KEYS keys (8 warps of 16)
// and streams the query tiles that see them (TC_BWD_QUERIES rows, causal:
// from the block's first key on), double-buffered with cp.async. Per tile,
// five products: S^T = K Q^T and dP^T = V dO^T (recomputed once), then
// dV += P^T dO and dK += dS^T Q into the warp's registers, and the tile's
// dQ part dS K (dS^T through shared memory) written to `partials` as fp32:
// one row per (key block, query). flash_attention_tc_dq_reduce_kernel sums a
// query's rows over the key blocks in their order: deterministic, no atomics.
#define TC_BWD_WARPS 8
#define TC_BWD_THREADS (32 * TC_BWD_WARPS)
#define TC_BWD_KEYS (16 * TC_BWD_WARPS) // keys of a backward block
#define TC_BWD_QUERIES 32               // queries of a backward tile
#define TC_DQ_FEATURES 16               // features of a warp's dQ products in the backward

__host__ __device__ inline int tc_key_blocks(int T) { return (T + TC_BWD_KEYS - 1) / TC_BWD_KEYS; }
// the first query whose dQ key block kb adds to (causal: its first key)
__host__ __device__ inline int tc_partial_first_query(int kb, bool causal) {
    return causal ? kb * TC_BWD_KEYS : 0;
}
// the partial rows of one (b, h) before key block kb's: one row per query it adds to
__host__ __device__ inline size_t tc_partial_row0(int kb, int T, bool causal) {
    return causal ? (size_t)kb * T - (size_t)TC_BWD_KEYS * kb * (kb - 1) / 2 : (size_t)kb * T;
}
// fp32 partials of dQ (rows of hs) for (B, T, C, NH): the scratch the backward needs
static inline size_t tc_dq_partial_floats(int B, int T, int C, int NH, bool causal) {
    return (size_t)B * NH * tc_partial_row0(tc_key_blocks(T), T, causal) * (size_t)(C / NH);
}

// grid (ceil(T / TC_BWD_KEYS), B NH): dk, dv rows of dqkv and the dQ partials
// (B NH, rows of tc_partial_row0, hs); registers: 2 blocks an SM (16 warps) at D <= 64
template <int D, bool CAUSAL>
__global__ void __launch_bounds__(TC_BWD_THREADS, D <= 64 ? 2 : 1)
    flash_attention_tc_backward_kernel(floatX *dqkv, float *partials, const floatX *dout,
                                       const floatX *qkv, const float *lse, const float *Dsum,
                                       int T, int NH, int hs, float scale) {
    constexpr int LD = D + 8, BQ = TC_BWD_QUERIES, BKEYS = TC_BWD_KEYS;
    constexpr int LDS = BQ + 8; // dS^T rows: BQ queries, padded by 16 bytes
    extern __shared__ __align__(16) __nv_bfloat16 tc_smem[];
    // K, V of the block; two buffers of a Q and a dO tile; dS^T of a tile; two of lse and D
    __nv_bfloat16 *k_s = tc_smem, *v_s = k_s + BKEYS * LD, *qd_s = v_s + BKEYS * LD;
    __nv_bfloat16 *ds_s = qd_s + 4 * BQ * LD;
    float *stats_s = (float *)(ds_s + BKEYS * LDS); // buffer j: lse at 2 BQ j, D after it
    const int warp = threadIdx.x / 32, lane = mma_lane_id();
    const int bh = blockIdx.y, b = bh / NH, h = bh % NH, C = NH * hs;
    const size_t stride = 3 * (size_t)C;
    const floatX *base = qkv + (size_t)b * T * stride + (size_t)h * hs;
    const int kb = blockIdx.x, k_first = kb * BKEYS, kr0 = k_first + 16 * warp;
    const int keys = min(BKEYS, T - k_first);
    const int q_first = tc_partial_first_query(kb, CAUSAL);
    const int tiles = (T - q_first + BQ - 1) / BQ;
    float *part = partials + ((size_t)bh * tc_partial_row0(tc_key_blocks(T), T, CAUSAL) +
                              tc_partial_row0(kb, T, CAUSAL)) * hs;
    auto load_tile = [&](int i) { // Q, dO, lse, D of queries q_first + i BQ .. into buffer i % 2
        const int q0 = q_first + i * BQ, queries = min(BQ, T - q0);
        __nv_bfloat16 *q_s = qd_s + (i % 2) * 2 * BQ * LD;
        tc_load_rows_async<D>(q_s, LD, BQ, queries, hs,
                              [&](int r) { return base + (size_t)(q0 + r) * stride; });
        tc_load_rows_async<D>(q_s + BQ * LD, LD, BQ, queries, hs, [&](int r) {
            return dout + ((size_t)b * T + q0 + r) * C + (size_t)h * hs;
        });
        float *st = stats_s + (i % 2) * 2 * BQ;
        for (int r = threadIdx.x; r < 2 * BQ; r += blockDim.x) {
            const float *src = (r < BQ ? lse : Dsum) + (size_t)bh * T + q0 + r % BQ;
            if (r % BQ < queries) cp_async_ca<4>(st + r, src);
            else st[r] = 0.0f;
        }
    };
    tc_load_rows_async<D>(k_s, LD, BKEYS, keys, hs,
                          [&](int r) { return base + (size_t)(k_first + r) * stride + C; });
    tc_load_rows_async<D>(v_s, LD, BKEYS, keys, hs,
                          [&](int r) { return base + (size_t)(k_first + r) * stride + 2 * C; });
    load_tile(0);
    cp_async_commit_group();
    MmaFragC dk[D / 8], dv[D / 8];
    TC_UNROLL for (int nt = 0; nt < D / 8; nt++) dk[nt] = dv[nt] = MmaFragC{};
    for (int i = 0; i < tiles; i++) {
        cp_async_wait_group<0>(); // this thread's copies of tile i (first: and of K, V) landed
        __syncthreads(); // everyone's; tile i - 1's buffers and dS^T are consumed
        if (i + 1 < tiles) {
            load_tile(i + 1);
            cp_async_commit_group();
        }
        const int q0 = q_first + i * BQ, queries = min(BQ, T - q0);
        const __nv_bfloat16 *q_s = qd_s + (i % 2) * 2 * BQ * LD, *dy_s = q_s + BQ * LD;
        const float *lse_s = stats_s + (i % 2) * 2 * BQ, *D_s = lse_s + BQ;
        // the warp's 16 keys against the tile: skipped when no query sees them
        // (then the dQ products below read none of its dS^T rows)
        if (kr0 < T && !(CAUSAL && q0 + BQ - 1 < kr0)) {
            MmaFragA ka[D / 16], va[D / 16]; // reloaded per tile: registers go to the sums
            tc_load_strip<D>(ka, k_s + 16 * warp * LD, LD);
            tc_load_strip<D>(va, v_s + 16 * warp * LD, LD);
            const int q16 = tc_chunks16(queries);
            MmaFragC s[BQ / 8], dp[BQ / 8]; // S^T, dP^T: rows are keys, columns queries
            tc_scores<D, BQ / 8>(s, ka, q_s, LD, 2 * q16);
            tc_scores<D, BQ / 8>(dp, va, dy_s, LD, 2 * q16);
            TC_UNROLL for (int nt = 0; nt < BQ / 8; nt++) {
                // the lane's two queries of the n-tile (its columns 2 (lane % 4) + 0, 1)
                const int qc = nt * 8 + mma_c_col(lane, 0);
                const float lse_q[2] = {lse_s[qc], lse_s[qc + 1]}, D_q[2] = {D_s[qc], D_s[qc + 1]};
                TC_UNROLL for (int e = 0; e < 4; e++) {
                    const int tk = kr0 + mma_c_row(lane, e), q = qc + e % 2;
                    const bool seen = q < queries && tk < T && (!CAUSAL || q0 + q >= tk);
                    const float p = seen ? expf(s[nt].r[e] * scale - lse_q[e % 2]) : 0.0f;
                    s[nt].r[e] = p;                               // P^T
                    dp[nt].r[e] = p * (dp[nt].r[e] - D_q[e % 2]); // dS^T
                }
                mma_store_c(ds_s + 16 * warp * LDS + nt * 8, LDS, dp[nt]); // bf16, as the A operands
            }
            tc_accumulate<D, BQ / 8>(dv, s, dy_s, LD, q16);  // dV += P^T dO
            tc_accumulate<D, BQ / 8>(dk, dp, q_s, LD, q16);  // dK += dS^T Q
        }
        __syncthreads(); // dS^T of every warp is in shared memory
        // dQ part of the tile, dS (BQ x keys) K (keys x D): a warp a 16-query
        // strip by TC_DQ_FEATURES features (each dS fragment feeds that many / 8 mma)
        constexpr int DQF = D < TC_DQ_FEATURES ? D : TC_DQ_FEATURES;
        for (int u = warp; u < (BQ / 16) * (D / DQF); u += TC_BWD_WARPS) {
            const int qs = 16 * (u % (BQ / 16)), f0 = DQF * (u / (BQ / 16));
            // the keys the strip's queries see (causal: up to its last query)
            const int seen = CAUSAL ? min(keys, max(0, q0 + qs + 16 - k_first)) : keys;
            MmaFragC acc[DQF / 8] = {};
            for (int kc = 0; kc < tc_chunks16(seen); kc++) {
                const MmaFragA a = mma_load_a_trans(ds_s + kc * 16 * LDS + qs, LDS);
                TC_UNROLL for (int np = 0; np < DQF / 16; np++) {
                    MmaFragB b0, b1;
                    mma_load_b_kn_pair(b0, b1, k_s + kc * 16 * LD + f0 + 16 * np, LD);
                    mma_bf16_m16n8k16(acc[2 * np], a, b0, acc[2 * np]);
                    mma_bf16_m16n8k16(acc[2 * np + 1], a, b1, acc[2 * np + 1]);
                }
            }
            TC_UNROLL for (int n = 0; n < DQF / 8; n++) {
                TC_UNROLL for (int e = 0; e < 4; e++) {
                    const int q = q0 + qs + mma_c_row(lane, e), d = f0 + 8 * n + mma_c_col(lane, e);
                    if (q < T && d < hs) part[(size_t)(q - q_first) * hs + d] = acc[n].r[e];
                }
            }
        }
    }
    if (kr0 >= T) return;
    const float fk[2] = {scale, scale}, fv[2] = {1.0f, 1.0f};
    tc_store_strip<D>(dk, fk, T - kr0, hs, [&](int r) {
        return dqkv + ((size_t)b * T + kr0 + r) * stride + C + (size_t)h * hs;
    });
    tc_store_strip<D>(dv, fv, T - kr0, hs, [&](int r) {
        return dqkv + ((size_t)b * T + kr0 + r) * stride + 2 * C + (size_t)h * hs;
    });
}

// dq rows of dqkv: scale x the sum of a query's partial rows over the key
// blocks that add to it, in key-block order; a warp a (b, h, query), lanes over features
template <bool CAUSAL>
__global__ void flash_attention_tc_dq_reduce_kernel(floatX *dqkv, const float *partials, int B,
                                                    int T, int NH, int hs, float scale) {
    const long long row = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= (long long)B * NH * T) return;
    const int t = (int)(row % T), bh = (int)(row / T), b = bh / NH, h = bh % NH;
    const int blocks = CAUSAL ? t / TC_BWD_KEYS + 1 : tc_key_blocks(T);
    const float *p = partials + (size_t)bh * tc_partial_row0(tc_key_blocks(T), T, CAUSAL) * hs;
    floatX *dq = dqkv + ((size_t)b * T + t) * 3 * NH * hs + (size_t)h * hs;
    for (int d = threadIdx.x % 32; d < hs; d += 32) {
        float sum = 0.0f;
        for (int kb = 0; kb < blocks; kb++) {
            sum += p[(tc_partial_row0(kb, T, CAUSAL) + t - tc_partial_first_query(kb, CAUSAL)) * hs + d];
        }
        dq[d] = from_float<floatX>(sum * scale);
    }
}

// dynamic shared memory of each kernel for the padded head size D
static inline size_t tc_forward_smem_bytes(int D) {
    return sizeof(__nv_bfloat16) * (size_t)(TC_FWD_ROWS + 4 * tc_forward_keys(D)) * (D + 8);
}
static inline size_t tc_backward_smem_bytes(int D) {
    return sizeof(__nv_bfloat16) * ((2 * TC_BWD_KEYS + 4 * TC_BWD_QUERIES) * (size_t)(D + 8) +
                                    TC_BWD_KEYS * (TC_BWD_QUERIES + 8)) +
           sizeof(float) * 4 * TC_BWD_QUERIES;
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
static inline void flash_attention_tc_backward_d(floatX *dqkv, float *partials, const float *Dsum,
                                                 const floatX *dout, const floatX *qkv,
                                                 const float *lse, int B, int T, int C, int NH,
                                                 cudaStream_t stream) {
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    const size_t smem = tc_backward_smem_bytes(D);
    smem_optin(flash_attention_tc_backward_kernel<D, CAUSAL>, smem, "tensor-core attention");
    dim3 grid(tc_key_blocks(T), B * NH);
    flash_attention_tc_backward_kernel<D, CAUSAL><<<grid, TC_BWD_THREADS, smem, stream>>>(
        dqkv, partials, dout, qkv, lse, Dsum, T, NH, hs, scale);
    CUDA_CHECK_LAUNCH();
    flash_attention_tc_dq_reduce_kernel<CAUSAL><<<ceil_div((long long)B * NH * T, 8), 256, 0, stream>>>(
        dqkv, partials, B, T, NH, hs, scale);
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
// Dsum: B NH T floats of scratch; partials: tc_dq_partial_floats(B, T, C, NH, CAUSAL)
template <bool CAUSAL>
static inline void flash_attention_tc_backward(floatX *dqkv, float *Dsum, float *partials,
                                               const floatX *dout, const floatX *out,
                                               const floatX *qkv, const float *lse, int B, int T,
                                               int C, int NH, cudaStream_t stream) {
    const int D = tc_check_shape(C, NH), hs = C / NH;
    flash_attention_row_dot_kernel<<<ceil_div((long long)B * NH * T, 4), 128, 0, stream>>>(
        Dsum, dout, out, B, T, NH, hs);
    CUDA_CHECK_LAUNCH();
    switch (D) {
    case 16: flash_attention_tc_backward_d<16, CAUSAL>(dqkv, partials, Dsum, dout, qkv, lse, B, T, C, NH, stream); break;
    case 32: flash_attention_tc_backward_d<32, CAUSAL>(dqkv, partials, Dsum, dout, qkv, lse, B, T, C, NH, stream); break;
    case 64: flash_attention_tc_backward_d<64, CAUSAL>(dqkv, partials, Dsum, dout, qkv, lse, B, T, C, NH, stream); break;
    default: flash_attention_tc_backward_d<128, CAUSAL>(dqkv, partials, Dsum, dout, qkv, lse, B, T, C, NH, stream); break;
    }
}

#endif
