// Swin's (shifted-)window attention on tensor cores: the math, image-order
// indexing, relative position bias and shift masks of
// swin_window_attention.cuh (llmc/kernels/swin_window.c), with every product a
// bf16 mma.m16n8k16 with fp32 accumulators (mma.cuh through
// attention_tc_warp.cuh), flash-style: the forward keeps lse per (window,
// head, row) instead of the (T, T) probabilities. A block owns a window and
// head; its T = W^2 tokens (padded to T16, a multiple of 16, with zero rows)
// of q, k, v sit in shared memory and a warp owns strips of 16 rows.
//   forward: S = Q K^T scale + table[rel(i, j)] + mask(i, j), an online
//     softmax over key tiles of 64, O = P V;
//   backward, per window of its chunk (grid (chunks, NH) as the FMA kernel):
//     query strips: P = exp(S - lse), dP = dO V^T, dS = P (dP - D) with
//     D_i = dO_i . O_i, dQ = scale dS K; P and dS go to shared memory (bf16)
//     and dS is added to the chunk's score-gradient partial (fp32, one lane
//     owns an entry, windows in order); then key strips: dV = P^T dO,
//     dK = scale dS^T Q from P and dS read transposed (mma_load_a_trans).
// The table gradient is then the FMA kernel's: partials summed in chunk
// order, each entry over its (i, j) pairs in order. No atomics.
// rel(i, j) = code(i) - code(j) + 2W (W - 1) with code(t) = (t / W)(2W - 1)
// + t % W: swin_relative_row with the division per token, not per pair.
#ifndef FOLDNORM_SWIN_WINDOW_ATTENTION_TC_CUH
#define FOLDNORM_SWIN_WINDOW_ATTENTION_TC_CUH

#include "attention_tc_warp.cuh"
#include "swin_window_attention.cuh"

#define SWIN_TC_KEYS 64 // keys of a step of the forward's online softmax and the backward's query strips

__host__ __device__ inline int swin_tc_tokens16(int W) { return (W * W + 15) / 16 * 16; }

// the table column of head h (fp32) and, per token of window w (T16 entries, the
// padding rows' as token 0's), its code and its region of the shifted frame
__device__ inline void swin_tc_load_bias(float *table_s, int *code_s, int *region_s,
                                         const floatX *table, int w, int h, int res, int W,
                                         int shift, int NH) {
    const int side = 2 * W - 1, T = W * W, T16 = swin_tc_tokens16(W);
    for (int r = threadIdx.x; r < side * side; r += blockDim.x) {
        table_s[r] = to_float(table[(size_t)r * NH + h]);
    }
    for (int t = threadIdx.x; t < T16; t += blockDim.x) {
        const int u = t < T ? t : 0;
        code_s[t] = (u / W) * side + u % W;
        region_s[t] = shift > 0 ? swin_shift_region(w, u, res, W, shift) : 0;
    }
}

// the bias of pair (i, j) of the window: table + the shifted-window mask
__device__ inline float swin_tc_bias(const float *table_s, const int *code_s, const int *region_s,
                                     int i, int j, int W) {
    return table_s[code_s[i] - code_s[j] + 2 * W * (W - 1)] +
           (region_s[i] == region_s[j] ? 0.0f : SWIN_MASK_VALUE);
}

// window g's rows of head h: q, k, v (and dy) into bf16 tiles of T16 rows, stride ld
template <int D>
__device__ inline void swin_tc_load_window(__nv_bfloat16 *q_s, __nv_bfloat16 *k_s,
                                           __nv_bfloat16 *v_s, __nv_bfloat16 *dy_s, int ld,
                                           const floatX *qkv, const floatX *dout, int g, int h,
                                           int res, int W, int shift, int C, int hs) {
    const int T = W * W, T16 = swin_tc_tokens16(W);
    auto row = [&](int t) { return swin_window_row(g, t, res, W, shift); };
    const floatX *q = qkv + (size_t)h * hs;
    tc_load_rows<D>(q_s, ld, T16, T, hs, [&](int t) { return q + row(t) * 3 * C; });
    tc_load_rows<D>(k_s, ld, T16, T, hs, [&](int t) { return q + row(t) * 3 * C + C; });
    tc_load_rows<D>(v_s, ld, T16, T, hs, [&](int t) { return q + row(t) * 3 * C + 2 * C; });
    if (dy_s != NULL) {
        tc_load_rows<D>(dy_s, ld, T16, T, hs,
                        [&](int t) { return dout + row(t) * C + (size_t)h * hs; });
    }
}

// grid (B nW, NH): a block a window and head; out (B, res^2, C), lse (B nW, NH, T)
template <int D>
__global__ void __launch_bounds__(TC_THREADS)
    swin_window_attention_tc_forward_kernel(floatX *out, float *lse, const floatX *qkv,
                                            const floatX *table, int res, int W, int shift, int C,
                                            int NH, float scale) {
    constexpr int LD = D + 8;
    extern __shared__ __align__(16) __nv_bfloat16 tc_smem[];
    const int g = blockIdx.x, h = blockIdx.y, T = W * W, T16 = swin_tc_tokens16(W), hs = C / NH;
    const int nW = (res / W) * (res / W), side = 2 * W - 1;
    __nv_bfloat16 *q_s = tc_smem, *k_s = q_s + T16 * LD, *v_s = k_s + T16 * LD;
    float *table_s = (float *)(v_s + T16 * LD);
    int *code_s = (int *)(table_s + side * side), *region_s = code_s + T16;
    swin_tc_load_window<D>(q_s, k_s, v_s, NULL, LD, qkv, NULL, g, h, res, W, shift, C, hs);
    swin_tc_load_bias(table_s, code_s, region_s, table, g % nW, h, res, W, shift, NH);
    __syncthreads();
    const int warp = threadIdx.x / 32, lane = mma_lane_id();
    for (int strip = warp; strip < T16 / 16; strip += TC_THREADS / 32) {
        const int i0 = strip * 16;
        MmaFragA qa[D / 16];
        tc_load_strip<D>(qa, q_s + i0 * LD, LD);
        TcRowState<D> st;
        tc_row_state_init(st);
        for (int k0 = 0; k0 < T; k0 += SWIN_TC_KEYS) {
            tc_online_step<D, SWIN_TC_KEYS / 8>(
                st, qa, k_s + k0 * LD, v_s + k0 * LD, LD, (min(SWIN_TC_KEYS, T - k0) + 15) / 16,
                [&](float s, int row, int key) {
                    const int i = i0 + row, j = k0 + key;
                    return j < T ? s * scale + swin_tc_bias(table_s, code_s, region_s, i, j, W)
                                 : -INFINITY;
                });
        }
        float l[2], inv[2];
        for (int r = 0; r < 2; r++) {
            l[r] = tc_quad_sum(st.l[r]);
            inv[r] = 1.0f / l[r];
        }
        tc_store_strip<D>(st.o, inv, T - i0, hs, [&](int r) {
            return out + swin_window_row(g, i0 + r, res, W, shift) * C + (size_t)h * hs;
        });
        for (int r = 0; r < 2; r++) {
            const int i = i0 + lane / 4 + 8 * r;
            if (lane % 4 == 0 && i < T) lse[((size_t)g * NH + h) * T + i] = st.m[r] + logf(l[r]);
        }
    }
}

// grid (chunks, NH): block (c, h) runs the backward of head h in windows
// [G c / chunks, G (c+1) / chunks) in order and owns dscore_partial[c][h] (T, T)
template <int D>
__global__ void __launch_bounds__(TC_THREADS)
    swin_window_attention_tc_backward_kernel(floatX *dqkv, float *dscore_partial,
                                             const floatX *dout, const floatX *out,
                                             const floatX *qkv, const float *lse,
                                             const floatX *table, int G, int chunks, int res,
                                             int W, int shift, int C, int NH, float scale) {
    constexpr int LD = D + 8;
    extern __shared__ __align__(16) __nv_bfloat16 tc_smem[];
    const int c = blockIdx.x, h = blockIdx.y, T = W * W, T16 = swin_tc_tokens16(W), hs = C / NH;
    const int LDP = T16 + 8, nW = (res / W) * (res / W), side = 2 * W - 1;
    __nv_bfloat16 *q_s = tc_smem, *k_s = q_s + T16 * LD, *v_s = k_s + T16 * LD;
    __nv_bfloat16 *dy_s = v_s + T16 * LD, *p_s = dy_s + T16 * LD, *ds_s = p_s + T16 * LDP;
    float *table_s = (float *)(ds_s + T16 * LDP), *lse_s = table_s + side * side;
    float *D_s = lse_s + T16;
    int *code_s = (int *)(D_s + T16), *region_s = code_s + T16;
    const int warp = threadIdx.x / 32, lane = mma_lane_id(), warps = TC_THREADS / 32;
    float *partial = dscore_partial + ((size_t)c * NH + h) * T * T;
    const size_t stride = 3 * (size_t)C;
    const int g0 = (int)((long long)G * c / chunks), g1 = (int)((long long)G * (c + 1) / chunks);
    for (int g = g0; g < g1; g++) {
        __syncthreads(); // the previous window's readers are done
        swin_tc_load_window<D>(q_s, k_s, v_s, dy_s, LD, qkv, dout, g, h, res, W, shift, C, hs);
        swin_tc_load_bias(table_s, code_s, region_s, table, g % nW, h, res, W, shift, NH);
        for (int t = threadIdx.x; t < T16; t += blockDim.x) {
            lse_s[t] = t < T ? lse[((size_t)g * NH + h) * T + t] : 0.0f;
        }
        for (int t = warp; t < T16; t += warps) { // D_t = dy_t . y_t, a warp per row
            float dot = 0.0f;
            if (t < T) {
                const size_t at = swin_window_row(g, t, res, W, shift) * C + (size_t)h * hs;
                for (int d = lane; d < hs; d += 32) dot += to_float(dout[at + d]) * to_float(out[at + d]);
            }
            dot = warp_sum(dot);
            if (lane == 0) D_s[t] = dot;
        }
        __syncthreads();
        for (int strip = warp; strip < T16 / 16; strip += warps) { // query strips: dq, P, dS
            const int i0 = strip * 16;
            MmaFragA qa[D / 16], dya[D / 16];
            tc_load_strip<D>(qa, q_s + i0 * LD, LD);
            tc_load_strip<D>(dya, dy_s + i0 * LD, LD);
            MmaFragC dq[D / 8];
            TC_UNROLL for (int nt = 0; nt < D / 8; nt++) dq[nt] = MmaFragC{};
            for (int k0 = 0; k0 < T; k0 += SWIN_TC_KEYS) {
                const int k16 = (min(SWIN_TC_KEYS, T - k0) + 15) / 16;
                MmaFragC s[SWIN_TC_KEYS / 8], dp[SWIN_TC_KEYS / 8];
                tc_scores<D, SWIN_TC_KEYS / 8>(s, qa, k_s + k0 * LD, LD, 2 * k16);
                tc_scores<D, SWIN_TC_KEYS / 8>(dp, dya, v_s + k0 * LD, LD, 2 * k16);
                TC_UNROLL for (int nt = 0; nt < SWIN_TC_KEYS / 8; nt++) {
                    if (nt >= 2 * k16) continue;
                    TC_UNROLL for (int e = 0; e < 4; e++) {
                        const int i = i0 + mma_c_row(lane, e), j = k0 + nt * 8 + mma_c_col(lane, e);
                        const bool in = i < T && j < T;
                        const float p =
                            in ? expf(s[nt].r[e] * scale +
                                      swin_tc_bias(table_s, code_s, region_s, i, j, W) - lse_s[i])
                               : 0.0f;
                        const float ds = p * (dp[nt].r[e] - D_s[i]);
                        p_s[i * LDP + j] = __float2bfloat16(p);
                        ds_s[i * LDP + j] = __float2bfloat16(ds);
                        if (in) partial[i * T + j] = (g == g0 ? 0.0f : partial[i * T + j]) + ds;
                        s[nt].r[e] = ds;
                    }
                }
                tc_accumulate<D, SWIN_TC_KEYS / 8>(dq, s, k_s + k0 * LD, LD, k16); // dQ += dS K
            }
            const float f[2] = {scale, scale};
            tc_store_strip<D>(dq, f, T - i0, hs, [&](int r) {
                return dqkv + swin_window_row(g, i0 + r, res, W, shift) * stride + (size_t)h * hs;
            });
        }
        __syncthreads(); // every strip's P and dS are in shared memory
        for (int strip = warp; strip < T16 / 16; strip += warps) { // key strips: dk, dv
            const int j0 = strip * 16;
            MmaFragC dk[D / 8], dv[D / 8];
            TC_UNROLL for (int nt = 0; nt < D / 8; nt++) dk[nt] = dv[nt] = MmaFragC{};
            for (int i0 = 0; i0 < T16; i0 += 16) {
                const MmaFragA pt = mma_load_a_trans(p_s + i0 * LDP + j0, LDP);   // P^T
                const MmaFragA dst = mma_load_a_trans(ds_s + i0 * LDP + j0, LDP); // dS^T
                TC_UNROLL for (int nt = 0; nt < D / 8; nt++) {
                    mma_bf16_m16n8k16(dv[nt], pt, mma_load_b_kn(dy_s + i0 * LD + nt * 8, LD), dv[nt]);
                    mma_bf16_m16n8k16(dk[nt], dst, mma_load_b_kn(q_s + i0 * LD + nt * 8, LD), dk[nt]);
                }
            }
            const float fk[2] = {scale, scale}, fv[2] = {1.0f, 1.0f};
            tc_store_strip<D>(dk, fk, T - j0, hs, [&](int r) {
                return dqkv + swin_window_row(g, j0 + r, res, W, shift) * stride + C + (size_t)h * hs;
            });
            tc_store_strip<D>(dv, fv, T - j0, hs, [&](int r) {
                return dqkv + swin_window_row(g, j0 + r, res, W, shift) * stride + 2 * C +
                       (size_t)h * hs;
            });
        }
    }
}

static inline size_t swin_tc_forward_smem_bytes(int W, int D) {
    const size_t T16 = swin_tc_tokens16(W), side = 2 * W - 1;
    return sizeof(__nv_bfloat16) * 3 * T16 * (D + 8) + sizeof(float) * side * side +
           sizeof(int) * 2 * T16;
}
static inline size_t swin_tc_backward_smem_bytes(int W, int D) {
    const size_t T16 = swin_tc_tokens16(W), side = 2 * W - 1;
    return sizeof(__nv_bfloat16) * (4 * T16 * (D + 8) + 2 * T16 * (T16 + 8)) +
           sizeof(float) * (side * side + 2 * T16) + sizeof(int) * 2 * T16;
}

// lse floats of a shape: (B nW, NH, T)
static inline size_t swin_window_attention_tc_lse_floats(const SwinWindowShape *s) {
    return (size_t)swin_window_groups(s) * s->NH * s->W * s->W;
}

static inline int swin_tc_check_shape(const SwinWindowShape *s) {
    swin_window_attention_check_shape(s);
    const int D = tc_padded_head(s->C / s->NH);
    if (D == 0) {
        fprintf(stderr, "error: tensor-core window attention needs head size <= %d (C=%d NH=%d)\n",
                TC_MAX_HS, s->C, s->NH);
        exit(EXIT_FAILURE);
    }
    return D;
}

template <int D>
static inline void swin_window_attention_tc_forward_d(floatX *out, float *lse, const floatX *qkv,
                                                      const floatX *table,
                                                      const SwinWindowShape *s,
                                                      cudaStream_t stream) {
    const size_t smem = swin_tc_forward_smem_bytes(s->W, D);
    smem_optin(swin_window_attention_tc_forward_kernel<D>, smem,
                  "Swin tensor-core window attention (window or head size too large)");
    dim3 grid(swin_window_groups(s), s->NH);
    swin_window_attention_tc_forward_kernel<D><<<grid, TC_THREADS, smem, stream>>>(
        out, lse, qkv, table, s->res, s->W, s->shift, s->C, s->NH,
        1.0f / sqrtf((float)(s->C / s->NH)));
    CUDA_CHECK_LAUNCH();
}

template <int D>
static inline void swin_window_attention_tc_backward_d(floatX *dqkv, float *scratch,
                                                       const floatX *dout, const floatX *out,
                                                       const floatX *qkv, const float *lse,
                                                       const floatX *table,
                                                       const SwinWindowShape *s,
                                                       cudaStream_t stream) {
    const size_t smem = swin_tc_backward_smem_bytes(s->W, D);
    smem_optin(swin_window_attention_tc_backward_kernel<D>, smem,
                  "Swin tensor-core window attention (window or head size too large)");
    dim3 grid(swin_score_chunks(s), s->NH);
    swin_window_attention_tc_backward_kernel<D><<<grid, TC_THREADS, smem, stream>>>(
        dqkv, scratch, dout, out, qkv, lse, table, swin_window_groups(s), swin_score_chunks(s),
        s->res, s->W, s->shift, s->C, s->NH, 1.0f / sqrtf((float)(s->C / s->NH)));
    CUDA_CHECK_LAUNCH();
}

// out (B, res^2, C) and lse (B nW, NH, T: swin_window_attention_tc_lse_floats)
// from qkv (B, res^2, 3C) and the bias table ((2W-1)^2, NH)
static inline void swin_window_attention_tc_forward_cuda(floatX *out, float *lse, const floatX *qkv,
                                                         const floatX *table,
                                                         const SwinWindowShape *s,
                                                         cudaStream_t stream) {
    switch (swin_tc_check_shape(s)) {
    case 16: swin_window_attention_tc_forward_d<16>(out, lse, qkv, table, s, stream); break;
    case 32: swin_window_attention_tc_forward_d<32>(out, lse, qkv, table, s, stream); break;
    case 64: swin_window_attention_tc_forward_d<64>(out, lse, qkv, table, s, stream); break;
    default: swin_window_attention_tc_forward_d<128>(out, lse, qkv, table, s, stream); break;
    }
}

// dqkv (B, res^2, 3C) overwritten from dout (B, res^2, C), the forward's out
// and lse, qkv and the table; dtable ((2W-1)^2, NH, fp32) accumulated;
// scratch: swin_window_attention_scratch_floats(s) floats (the FMA kernel's)
static inline void swin_window_attention_tc_backward_cuda(floatX *dqkv, float *dtable,
                                                          float *scratch, const floatX *dout,
                                                          const floatX *out, const floatX *qkv,
                                                          const float *lse, const floatX *table,
                                                          const SwinWindowShape *s,
                                                          cudaStream_t stream) {
    switch (swin_tc_check_shape(s)) {
    case 16: swin_window_attention_tc_backward_d<16>(dqkv, scratch, dout, out, qkv, lse, table, s, stream); break;
    case 32: swin_window_attention_tc_backward_d<32>(dqkv, scratch, dout, out, qkv, lse, table, s, stream); break;
    case 64: swin_window_attention_tc_backward_d<64>(dqkv, scratch, dout, out, qkv, lse, table, s, stream); break;
    default: swin_window_attention_tc_backward_d<128>(dqkv, scratch, dout, out, qkv, lse, table, s, stream); break;
    }
    swin_window_table_gradient_cuda(dtable, scratch, s, stream);
}

#endif
