// The warp-level pieces of the tensor-core attention kernels
// (flash_attention_tc.cuh for GPT-2 and ViT, swin_window_attention_tc.cuh for
// Swin), all through llmc/cuda/mma.cuh: bf16 tiles in shared memory, a warp
// owns a strip of 16 rows and keeps its products in mma C fragments.
//   - tc_load_rows: rows of one head from global memory (floatX) into a bf16
//     tile, zero beyond the valid rows and beyond the head size (the head
//     size is padded to D, a multiple of 16: the zero features add nothing);
//   - tc_scores: S (16 x 8 n) = A (16 x D) B^T for n-tiles of 8 rows of B;
//   - tc_online_step: one key tile of the forward's online softmax (running
//     max m and sum l per row, the output rescaled by exp(m - m') when the
//     max grows, P rounded to bf16 for O += P V as its A operand);
//   - tc_store_strip: C fragments (times a factor per row) to global rows;
//   - the pair versions (tc_load_rows_async, tc_pair_*) for a warp that owns
//     32 rows as two 16-row strips: each B fragment, two of them per
//     ldmatrix.x4, feeds both strips' mma, and tiles load with cp.async.
// Fragment rows: element e of a lane's C fragment is row lane/4 + 8 (e/2),
// column 2 (lane%4) + e%2 (mma.cuh); a row's 16 x 8 values lie in the 4
// lanes of a quad, so a row reduction is two __shfl_xor_sync (offsets 1, 2).
#ifndef FOLDNORM_ATTENTION_TC_WARP_CUH
#define FOLDNORM_ATTENTION_TC_WARP_CUH

#include <math.h>

#include "cp_async.cuh"
#include "cuda_common.cuh"
#include "mma.cuh"
#include "smem_optin.cuh"

// loops over fragment arrays must unroll (constant indices keep them in registers)
#if defined(__CUDA_ARCH__)
#define TC_UNROLL _Pragma("unroll")
#else
#define TC_UNROLL
#endif

#define TC_THREADS 128 // 4 warps a block
#define TC_MAX_HS 128

// the tile width for head size hs: hs rounded up to 16, 32, 64 or 128 (0: too large)
static inline int tc_padded_head(int hs) {
    return hs <= 16 ? 16 : hs <= 32 ? 32 : hs <= 64 ? 64 : hs <= 128 ? 128 : 0;
}

// Rows [0, rows) of D bf16 into dst (row stride ld) from global rows row(r)
// (a pointer to the head's first feature), r < valid; features >= hs and rows
// >= valid are zero. 16-byte loads where a pack lies whole in the head and is aligned.
template <int D, typename Row>
__device__ inline void tc_load_rows(__nv_bfloat16 *dst, int ld, int rows, int valid, int hs,
                                    Row row) {
    for (int idx = threadIdx.x; idx < rows * (D / 8); idx += blockDim.x) {
        const int r = idx / (D / 8), c = idx % (D / 8) * 8;
        Pack<__nv_bfloat16> x;
        const floatX *p = r < valid ? row(r) + c : NULL;
        if constexpr (sizeof(floatX) == 2) {
            if (p != NULL && c + 8 <= hs && (uintptr_t)p % 16 == 0) {
                const Pack<floatX> v = load_pack(p);
                for (int i = 0; i < 8; i++) x.v[i] = v.v[i];
                store_pack(dst + r * ld + c, x);
                continue;
            }
        }
        for (int i = 0; i < 8; i++) {
            x.v[i] = __float2bfloat16(p != NULL && c + i < hs ? to_float(p[i]) : 0.0f);
        }
        store_pack(dst + r * ld + c, x);
    }
}

// tc_load_rows with cp.async for the 16-byte packs that lie whole in the
// head, 16-byte aligned, in bf16 builds (the others, and zeros, stored at
// once): the caller commits and waits (cp_async.cuh)
template <int D, typename Row>
__device__ inline void tc_load_rows_async(__nv_bfloat16 *dst, int ld, int rows, int valid, int hs,
                                          Row row) {
    for (int idx = threadIdx.x; idx < rows * (D / 8); idx += blockDim.x) {
        const int r = idx / (D / 8), c = idx % (D / 8) * 8;
        const floatX *p = r < valid ? row(r) + c : NULL;
        if constexpr (sizeof(floatX) == 2) {
            if (p != NULL && c + 8 <= hs && (uintptr_t)p % 16 == 0) {
                cp_async_cg16(dst + r * ld + c, p);
                continue;
            }
        }
        Pack<__nv_bfloat16> x;
        for (int i = 0; i < 8; i++) {
            x.v[i] = __float2bfloat16(p != NULL && c + i < hs ? to_float(p[i]) : 0.0f);
        }
        store_pack(dst + r * ld + c, x);
    }
}

// A fragments of a 16-row strip of D features (tile row stride ld)
template <int D>
__device__ inline void tc_load_strip(MmaFragA (&a)[D / 16], const __nv_bfloat16 *strip, int ld) {
    TC_UNROLL for (int kc = 0; kc < D / 16; kc++) a[kc] = mma_load_a(strip + kc * 16, ld);
}

// s[nt] = A b_tile[nt 8 .. nt 8 + 7]^T for nt < n8 (b_tile: rows of D features,
// stride ld), zero for nt >= n8. n8 is warp-uniform.
template <int D, int N8>
__device__ inline void tc_scores(MmaFragC (&s)[N8], const MmaFragA (&a)[D / 16],
                                 const __nv_bfloat16 *b_tile, int ld, int n8) {
    TC_UNROLL for (int nt = 0; nt < N8; nt++) {
        s[nt] = MmaFragC{};
        if (nt >= n8) continue;
        TC_UNROLL for (int kc = 0; kc < D / 16; kc++) {
            mma_bf16_m16n8k16(s[nt], a[kc], mma_load_b_nk(b_tile + nt * 8 * ld + kc * 16, ld),
                              s[nt]);
        }
    }
}

// acc[nt] += A(c frags s[2 kk], s[2 kk + 1], rounded to bf16) b_tile[kk 16 ..][nt 8 ..]
// for kk < k16: the product of a 16 x 16 k16 strip and k16 16 rows of D features
template <int D, int N8>
__device__ inline void tc_accumulate(MmaFragC (&acc)[D / 8], const MmaFragC (&s)[N8],
                                     const __nv_bfloat16 *b_tile, int ld, int k16) {
    TC_UNROLL for (int kk = 0; kk < N8 / 2; kk++) {
        if (kk >= k16) continue;
        const MmaFragA a = mma_a_from_c(s[2 * kk], s[2 * kk + 1]);
        TC_UNROLL for (int nt = 0; nt < D / 8; nt++) {
            mma_bf16_m16n8k16(acc[nt], a, mma_load_b_kn(b_tile + kk * 16 * ld + nt * 8, ld),
                              acc[nt]);
        }
    }
}

// the largest and the sum over a row's quad (lanes 4 (row%8) .. + 3)
__device__ inline float tc_quad_max(float x) {
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ inline float tc_quad_sum(float x) {
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// a strip's running softmax: output o (16 x D), max m and this lane's part
// of the sum l for its two rows (lane/4, lane/4 + 8)
template <int D> struct TcRowState {
    MmaFragC o[D / 8];
    float m[2], l[2];
};

template <int D> __device__ inline void tc_row_state_init(TcRowState<D> &st) {
    TC_UNROLL for (int nt = 0; nt < D / 8; nt++) st.o[nt] = MmaFragC{};
    st.m[0] = st.m[1] = -INFINITY;
    st.l[0] = st.l[1] = 0.0f;
}

// One key tile of the online softmax for a strip: k16 16-key chunks (warp-
// uniform, <= N8 / 2) of k_tile and v_tile (rows of D features, stride ld,
// finite: zero where not valid). score(s, row, key) gives the logit of the
// raw product s for the strip's row and the tile's key, -INFINITY when masked.
template <int D, int N8, typename Score>
__device__ inline void tc_online_step(TcRowState<D> &st, const MmaFragA (&qa)[D / 16],
                                      const __nv_bfloat16 *k_tile, const __nv_bfloat16 *v_tile,
                                      int ld, int k16, Score score) {
    const int lane = mma_lane_id();
    MmaFragC s[N8];
    tc_scores<D, N8>(s, qa, k_tile, ld, 2 * k16);
    float mx[2] = {-INFINITY, -INFINITY};
    TC_UNROLL for (int nt = 0; nt < N8; nt++) {
        TC_UNROLL for (int e = 0; e < 4; e++) {
            const float v = nt < 2 * k16 ? score(s[nt].r[e], mma_c_row(lane, e),
                                                 nt * 8 + mma_c_col(lane, e))
                                         : -INFINITY;
            s[nt].r[e] = v;
            mx[e / 2] = fmaxf(mx[e / 2], v);
        }
    }
    float base[2]; // the new max, 0 while a row has seen no key (then every p is 0)
    TC_UNROLL for (int i = 0; i < 2; i++) {
        const float m_new = fmaxf(st.m[i], tc_quad_max(mx[i]));
        base[i] = m_new == -INFINITY ? 0.0f : m_new;
        const float rescale = expf(st.m[i] - base[i]); // 0 on the first keys seen
        st.m[i] = m_new;
        st.l[i] *= rescale;
        TC_UNROLL for (int nt = 0; nt < D / 8; nt++) {
            st.o[nt].r[2 * i] *= rescale;
            st.o[nt].r[2 * i + 1] *= rescale;
        }
    }
    TC_UNROLL for (int nt = 0; nt < N8; nt++) {
        TC_UNROLL for (int e = 0; e < 4; e++) {
            const float p = expf(s[nt].r[e] - base[e / 2]); // masked: exp(-inf) = 0
            s[nt].r[e] = p;
            st.l[e / 2] += p;
        }
    }
    tc_accumulate<D, N8>(st.o, s, v_tile, ld, k16);
}

// ---- a warp with two 16-row strips (32 rows) --------------------------------

// s[m][nt] = A_m b_tile[nt 8 .. nt 8 + 7]^T for the strips m = 0, 1 and the
// n16 16-row chunks of b_tile (rows of D features, stride ld; zero beyond,
// n16 warp-uniform); a(m, kc): strip m's A fragment of features kc 16 ..
template <int D, int N8, typename AFrag>
__device__ inline void tc_pair_scores(MmaFragC (&s)[2][N8], AFrag a, const __nv_bfloat16 *b_tile,
                                      int ld, int n16) {
    TC_UNROLL for (int nt = 0; nt < N8; nt++) s[0][nt] = s[1][nt] = MmaFragC{};
    TC_UNROLL for (int kc = 0; kc < D / 16; kc++) { // (A fetched once a tile where a() loads it)
        const MmaFragA a0 = a(0, kc), a1 = a(1, kc);
        TC_UNROLL for (int np = 0; np < N8 / 2; np++) {
            if (np >= n16) continue;
            MmaFragB b0, b1;
            mma_load_b_nk_pair(b0, b1, b_tile + np * 16 * ld + kc * 16, ld);
            mma_bf16_m16n8k16(s[0][2 * np], a0, b0, s[0][2 * np]);
            mma_bf16_m16n8k16(s[0][2 * np + 1], a0, b1, s[0][2 * np + 1]);
            mma_bf16_m16n8k16(s[1][2 * np], a1, b0, s[1][2 * np]);
            mma_bf16_m16n8k16(s[1][2 * np + 1], a1, b1, s[1][2 * np + 1]);
        }
    }
}

// acc_m[nt] += A(s[m][2 kk], s[m][2 kk + 1], rounded to bf16) b_tile[kk 16 ..][nt 8 ..]
// for kk < k16, both strips m (tc_accumulate for two strips)
template <int D, int N8>
__device__ inline void tc_pair_accumulate(MmaFragC (&acc0)[D / 8], MmaFragC (&acc1)[D / 8],
                                          const MmaFragC (&s)[2][N8], const __nv_bfloat16 *b_tile,
                                          int ld, int k16) {
    TC_UNROLL for (int kk = 0; kk < N8 / 2; kk++) {
        if (kk >= k16) continue;
        const MmaFragA a0 = mma_a_from_c(s[0][2 * kk], s[0][2 * kk + 1]);
        const MmaFragA a1 = mma_a_from_c(s[1][2 * kk], s[1][2 * kk + 1]);
        TC_UNROLL for (int np = 0; np < D / 16; np++) {
            MmaFragB b0, b1;
            mma_load_b_kn_pair(b0, b1, b_tile + kk * 16 * ld + np * 16, ld);
            mma_bf16_m16n8k16(acc0[2 * np], a0, b0, acc0[2 * np]);
            mma_bf16_m16n8k16(acc0[2 * np + 1], a0, b1, acc0[2 * np + 1]);
            mma_bf16_m16n8k16(acc1[2 * np], a1, b0, acc1[2 * np]);
            mma_bf16_m16n8k16(acc1[2 * np + 1], a1, b1, acc1[2 * np + 1]);
        }
    }
}

// tc_online_step for two strips (st[0]: rows 0-15, st[1]: rows 16-31 of the
// warp's 32): score(s, row, key) with row < 32; a(m, kc) as tc_pair_scores
template <int D, int N8, typename AFrag, typename Score>
__device__ inline void tc_pair_online_step(TcRowState<D> (&st)[2], AFrag a,
                                           const __nv_bfloat16 *k_tile,
                                           const __nv_bfloat16 *v_tile, int ld, int k16,
                                           Score score) {
    const int lane = mma_lane_id();
    MmaFragC s[2][N8];
    tc_pair_scores<D, N8>(s, a, k_tile, ld, k16);
    TC_UNROLL for (int m = 0; m < 2; m++) {
        float mx[2] = {-INFINITY, -INFINITY};
        TC_UNROLL for (int nt = 0; nt < N8; nt++) {
            TC_UNROLL for (int e = 0; e < 4; e++) {
                const float v = nt < 2 * k16 ? score(s[m][nt].r[e], 16 * m + mma_c_row(lane, e),
                                                     nt * 8 + mma_c_col(lane, e))
                                             : -INFINITY;
                s[m][nt].r[e] = v;
                mx[e / 2] = fmaxf(mx[e / 2], v);
            }
        }
        float base[2]; // the new max, 0 while a row has seen no key (then every p is 0)
        TC_UNROLL for (int i = 0; i < 2; i++) {
            const float m_new = fmaxf(st[m].m[i], tc_quad_max(mx[i]));
            base[i] = m_new == -INFINITY ? 0.0f : m_new;
            const float rescale = expf(st[m].m[i] - base[i]); // 0 on the first keys seen
            st[m].m[i] = m_new;
            st[m].l[i] *= rescale;
            TC_UNROLL for (int nt = 0; nt < D / 8; nt++) {
                st[m].o[nt].r[2 * i] *= rescale;
                st[m].o[nt].r[2 * i + 1] *= rescale;
            }
        }
        TC_UNROLL for (int nt = 0; nt < N8; nt++) {
            TC_UNROLL for (int e = 0; e < 4; e++) {
                const float p = expf(s[m][nt].r[e] - base[e / 2]); // masked: exp(-inf) = 0
                s[m][nt].r[e] = p;
                st[m].l[e / 2] += p;
            }
        }
    }
    tc_pair_accumulate<D, N8>(st[0].o, st[1].o, s, v_tile, ld, k16);
}

// Rows r < valid of a strip's fragments acc (16 x D) times f[row half] to
// global: row(r) points at the row's first feature; features >= hs are dropped
template <int D, typename Row>
__device__ inline void tc_store_strip(const MmaFragC (&acc)[D / 8], const float (&f)[2], int valid,
                                      int hs, Row row) {
    const int lane = mma_lane_id();
    TC_UNROLL for (int nt = 0; nt < D / 8; nt++) {
        TC_UNROLL for (int e = 0; e < 4; e++) {
            const int r = mma_c_row(lane, e), d = nt * 8 + mma_c_col(lane, e);
            if (r < valid && d < hs) row(r)[d] = from_float<floatX>(acc[nt].r[e] * f[e / 2]);
        }
    }
}

#endif
