// The checks of llmc/cuda/mma.cuh against host products, shared by
// dev/cuda/mma.cu (a device run, and emulated) and the emulator's
// self-check (build/emu/emu_selftest mma, which test/suites/cuda_emu.sh also
// runs under EMU_MMA_MUTATION, where they must fail). Every kernel runs two
// warps, each on matrices of its own. Each check prints one line,
// "check NAME: ... ok" or "... FAIL"; mma_check_all returns the failures.
// Tolerance of an fp32 sum of n exact bf16 products (and c), any order: each
// of the n adds errs by at most 2^-24 of the running magnitude when it
// rounds to nearest, 2^-23 when it truncates, so
//     |got - ref| <= 2 n 2^-24 (|c| + sum_k |a_k b_k|)
// per element, ref in double; a wrong layout misses by O(1).
#ifndef FOLDNORM_DEV_CUDA_MMA_CHECK_CUH
#define FOLDNORM_DEV_CUDA_MMA_CHECK_CUH

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common.cuh"
#include "cuda/mma.cuh"

#define MMA_CHECK_WARPS 2
#define MMA_CHECK_LD_ROWS 24  // ldmatrix buffer: 32 rows of 24 b16 (48 bytes) a warp
#define MMA_CHECK_LD_BUF (32 * MMA_CHECK_LD_ROWS)
#define MMA_CHECK_LDQK 40     // Q, K tiles: 16 x 32 features, rows padded to 40
#define MMA_CHECK_LDV 24      // V tile: 16 keys x 16 features, rows padded to 24

__device__ inline uint32_t mma_check_pack(__nv_bfloat16 lo, __nv_bfloat16 hi) {
    return (uint32_t)__bfloat16_as_ushort(lo) | (uint32_t)__bfloat16_as_ushort(hi) << 16;
}

// D = A B + C, registers filled and spilled through mma.cuh's coordinate
// functions: A 16x16 (row-major), B 16x8 ([k][n]), C and D 16x8, per warp
__global__ void mma_check_registers_kernel(float *D, const __nv_bfloat16 *A,
                                           const __nv_bfloat16 *B, const float *C) {
    const int w = threadIdx.x / 32, lane = mma_lane_id();
    A += w * 256;
    B += w * 128;
    C += w * 128;
    D += w * 128;
    MmaFragA a;
    MmaFragB b;
    MmaFragC c, d;
    for (int e = 0; e < 8; e += 2) {
        a.r[e / 2] = mma_check_pack(A[mma_a_row(lane, e) * 16 + mma_a_col(lane, e)],
                                    A[mma_a_row(lane, e + 1) * 16 + mma_a_col(lane, e + 1)]);
    }
    for (int e = 0; e < 4; e += 2) {
        b.r[e / 2] = mma_check_pack(B[mma_b_row(lane, e) * 8 + mma_b_col(lane, e)],
                                    B[mma_b_row(lane, e + 1) * 8 + mma_b_col(lane, e + 1)]);
    }
    for (int e = 0; e < 4; e++) c.r[e] = C[mma_c_row(lane, e) * 8 + mma_c_col(lane, e)];
    mma_bf16_m16n8k16(d, a, b, c);
    for (int e = 0; e < 4; e++) D[mma_c_row(lane, e) * 8 + mma_c_col(lane, e)] = d.r[e];
}

template <int COUNT, bool TRANS>
__device__ inline void mma_check_ldmatrix_call(uint32_t (&r)[4], const void *row) {
    if constexpr (COUNT == 1) {
        uint32_t x[1];
        if constexpr (TRANS) ldmatrix_x1_trans(x, row);
        else ldmatrix_x1(x, row);
        r[0] = x[0];
    } else if constexpr (COUNT == 2) {
        uint32_t x[2];
        if constexpr (TRANS) ldmatrix_x2_trans(x, row);
        else ldmatrix_x2(x, row);
        r[0] = x[0];
        r[1] = x[1];
    } else {
        if constexpr (TRANS) ldmatrix_x4_trans(r, row);
        else ldmatrix_x4(r, row);
    }
}

// lane j supplies logical row j (row j % 8 of matrix j / 8), which lies at
// row_offset[j] of its warp's buffer; out: every lane's 4 registers
template <int COUNT, bool TRANS>
__global__ void mma_check_ldmatrix_kernel(uint32_t *out, const __nv_bfloat16 *buffer,
                                          const int *row_offset) {
    extern __shared__ __align__(16) __nv_bfloat16 mma_check_smem[];
    for (int i = threadIdx.x; i < MMA_CHECK_WARPS * MMA_CHECK_LD_BUF; i += blockDim.x) {
        mma_check_smem[i] = buffer[i];
    }
    __syncthreads();
    const int w = threadIdx.x / 32, lane = mma_lane_id();
    const int j = lane % (8 * COUNT); // the unused lanes repeat a used lane's address
    uint32_t r[4] = {0, 0, 0, 0};
    mma_check_ldmatrix_call<COUNT, TRANS>(
        r, mma_check_smem + w * MMA_CHECK_LD_BUF + row_offset[w * 32 + j]);
    for (int i = 0; i < 4; i++) out[(w * 32 + lane) * 4 + i] = r[i];
}

// S = Q K^T (16 queries x 16 keys over 32 features: two k-steps, two n-tiles)
// through mma_load_a, mma_load_b_nk and mma_store_c (fp32 and bf16), then
// O = bf16(S) V (16 x 16 features) through mma_a_from_c and mma_load_b_kn, and
// Ot = bf16(S)^T V through mma_load_a_trans of S stored in shared memory;
// S2 and O2: S and O again with both B fragments of a k-step (S) or of the
// 16 features (O) from one ldmatrix.x4 (mma_load_b_nk_pair, mma_load_b_kn_pair)
__global__ void mma_check_helpers_kernel(float *S, __nv_bfloat16 *Sb, float *O, float *Ot,
                                         float *S2, float *O2, const __nv_bfloat16 *Q,
                                         const __nv_bfloat16 *K, const __nv_bfloat16 *V) {
    __shared__ __align__(16) __nv_bfloat16 q_tile[MMA_CHECK_WARPS][16 * MMA_CHECK_LDQK];
    __shared__ __align__(16) __nv_bfloat16 k_tile[MMA_CHECK_WARPS][16 * MMA_CHECK_LDQK];
    __shared__ __align__(16) __nv_bfloat16 v_tile[MMA_CHECK_WARPS][16 * MMA_CHECK_LDV];
    const int w = threadIdx.x / 32, lane = mma_lane_id();
    for (int i = lane; i < 16 * 32; i += 32) {
        q_tile[w][(i / 32) * MMA_CHECK_LDQK + i % 32] = Q[w * 512 + i];
        k_tile[w][(i / 32) * MMA_CHECK_LDQK + i % 32] = K[w * 512 + i];
    }
    for (int i = lane; i < 16 * 16; i += 32) v_tile[w][(i / 16) * MMA_CHECK_LDV + i % 16] = V[w * 256 + i];
    __syncwarp();
    MmaFragC s[2];
    for (int nt = 0; nt < 2; nt++) {
        s[nt] = MmaFragC{};
        for (int ks = 0; ks < 2; ks++) {
            const MmaFragA a = mma_load_a(q_tile[w] + ks * 16, MMA_CHECK_LDQK);
            const MmaFragB b = mma_load_b_nk(k_tile[w] + nt * 8 * MMA_CHECK_LDQK + ks * 16, MMA_CHECK_LDQK);
            mma_bf16_m16n8k16(s[nt], a, b, s[nt]);
        }
        mma_store_c(S + w * 256 + nt * 8, 16, s[nt]);
        mma_store_c(Sb + w * 256 + nt * 8, 16, s[nt]);
    }
    const MmaFragA p = mma_a_from_c(s[0], s[1]);
    for (int nt = 0; nt < 2; nt++) {
        MmaFragC o = {};
        mma_bf16_m16n8k16(o, p, mma_load_b_kn(v_tile[w] + nt * 8, MMA_CHECK_LDV), o);
        mma_store_c(O + w * 256 + nt * 8, 16, o);
    }
    MmaFragC s2[2] = {}, o2[2] = {};
    for (int ks = 0; ks < 2; ks++) {
        const MmaFragA a = mma_load_a(q_tile[w] + ks * 16, MMA_CHECK_LDQK);
        MmaFragB b0, b1;
        mma_load_b_nk_pair(b0, b1, k_tile[w] + ks * 16, MMA_CHECK_LDQK);
        mma_bf16_m16n8k16(s2[0], a, b0, s2[0]);
        mma_bf16_m16n8k16(s2[1], a, b1, s2[1]);
    }
    MmaFragB v0, v1;
    mma_load_b_kn_pair(v0, v1, v_tile[w], MMA_CHECK_LDV);
    mma_bf16_m16n8k16(o2[0], p, v0, o2[0]);
    mma_bf16_m16n8k16(o2[1], p, v1, o2[1]);
    for (int nt = 0; nt < 2; nt++) {
        mma_store_c(S2 + w * 256 + nt * 8, 16, s2[nt]);
        mma_store_c(O2 + w * 256 + nt * 8, 16, o2[nt]);
    }
    // Ot = bf16(S)^T V: S stored as bf16 [query][key] (q_tile is free: the S products
    // above are done), read back transposed as the A of the keys
    __syncwarp();
    for (int nt = 0; nt < 2; nt++) mma_store_c(q_tile[w] + nt * 8, MMA_CHECK_LDQK, s[nt]);
    __syncwarp();
    const MmaFragA pt = mma_load_a_trans(q_tile[w], MMA_CHECK_LDQK);
    for (int nt = 0; nt < 2; nt++) {
        MmaFragC o = {};
        mma_bf16_m16n8k16(o, pt, mma_load_b_kn(v_tile[w] + nt * 8, MMA_CHECK_LDV), o);
        mma_store_c(Ot + w * 256 + nt * 8, 16, o);
    }
}

// ---- host side ----

static inline uint16_t mma_check_bits(__nv_bfloat16 x) {
    uint16_t b;
    memcpy(&b, &x, sizeof(b));
    return b;
}
static inline __nv_bfloat16 mma_check_random_bf16(DevRng *rng) {
    return __float2bfloat16(2.0f * dev_uniform(rng));
}
static inline void mma_check_shuffle(int *v, int n, DevRng *rng) {
    for (int i = n - 1; i > 0; i--) {
        int j = (int)((dev_uniform(rng) + 1.0f) * 0.5f * (float)(i + 1));
        j = j > i ? i : j;
        const int t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}
template <typename T> static inline void mma_check_download(T *host, const T *dev, size_t n) {
    CUDA_CHECK(cudaMemcpy(host, dev, n * sizeof(T), cudaMemcpyDeviceToHost));
}

// got against ref with the tolerance of n products of absolute sum abs_sum[i];
// extra: a further finding for the line, extra_ok whether it holds
static inline int mma_check_close(const char *name, const float *got, const double *ref,
                                  const double *abs_sum, int count, int n, const char *extra = "",
                                  int extra_ok = 1) {
    double worst = 0.0; // the largest |got - ref| / tolerance
    int bad = 0;
    for (int i = 0; i < count; i++) {
        const double err = fabs((double)got[i] - ref[i]);
        const double tol = 2.0 * n * ldexp(1.0, -24) * abs_sum[i];
        if (!(err <= tol)) bad++;
        const double ratio = err == 0.0 ? 0.0 : tol > 0.0 ? err / tol : INFINITY;
        if (!(ratio <= worst)) worst = ratio;
    }
    const int ok = bad == 0 && extra_ok;
    printf("check %s: %d of %d elements outside the tolerance, max err/tol %.3g%s %s\n", name, bad,
           count, worst, extra, ok ? "ok" : "FAIL");
    return ok;
}

static int mma_check_registers(DevRng *rng) {
    const int W = MMA_CHECK_WARPS;
    __nv_bfloat16 A[W * 256], B[W * 128];
    float C[W * 128], D[W * 128];
    for (int i = 0; i < W * 256; i++) A[i] = mma_check_random_bf16(rng);
    for (int i = 0; i < W * 128; i++) B[i] = mma_check_random_bf16(rng);
    for (int i = 0; i < W * 128; i++) C[i] = 4.0f * dev_uniform(rng); // full fp32 accumulators
    __nv_bfloat16 *dA = to_device(A, W * 256), *dB = to_device(B, W * 128);
    float *dC = to_device(C, W * 128), *dD;
    CUDA_CHECK(cudaMalloc(&dD, W * 128 * sizeof(float)));
    mma_check_registers_kernel<<<1, 32 * W>>>(dD, dA, dB, dC);
    CUDA_CHECK_LAUNCH();
    mma_check_download(D, dD, W * 128);
    double ref[W * 128], abs_sum[W * 128];
    for (int w = 0; w < W; w++) {
        for (int m = 0; m < 16; m++) {
            for (int n = 0; n < 8; n++) {
                const int i = w * 128 + m * 8 + n;
                ref[i] = C[i];
                abs_sum[i] = fabs((double)C[i]);
                for (int k = 0; k < 16; k++) {
                    const double p = (double)__bfloat162float(A[w * 256 + m * 16 + k]) *
                                     (double)__bfloat162float(B[w * 128 + k * 8 + n]);
                    ref[i] += p;
                    abs_sum[i] += fabs(p);
                }
            }
        }
    }
    const int ok = mma_check_close("mma.m16n8k16 registers (A, B, C/D per the ISA tables)", D, ref,
                                   abs_sum, W * 128, 16);
    void *dev[] = {dA, dB, dC, dD};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
    return ok;
}

// 4 matrices of distinct values (+-1 .. 256, exact in bf16) whose 32 rows lie
// scattered over the buffer (a permuted row, 16-byte aligned, 0.5 between)
template <int COUNT, bool TRANS> static int mma_check_ldmatrix(DevRng *rng) {
    const int W = MMA_CHECK_WARPS;
    __nv_bfloat16 buffer[W * MMA_CHECK_LD_BUF];
    int offset[W * 32];
    uint16_t logical[W][32][8];
    for (int i = 0; i < W * MMA_CHECK_LD_BUF; i++) buffer[i] = __float2bfloat16(0.5f);
    for (int w = 0; w < W; w++) {
        int rows[32], values[256];
        for (int i = 0; i < 32; i++) rows[i] = i;
        for (int i = 0; i < 256; i++) values[i] = i + 1;
        mma_check_shuffle(rows, 32, rng);
        mma_check_shuffle(values, 256, rng);
        for (int j = 0; j < 32; j++) {
            offset[w * 32 + j] = rows[j] * MMA_CHECK_LD_ROWS + (rows[j] % 2) * 8;
            for (int c = 0; c < 8; c++) {
                const __nv_bfloat16 v = __float2bfloat16((float)((w % 2 ? -1 : 1) * values[j * 8 + c]));
                buffer[w * MMA_CHECK_LD_BUF + offset[w * 32 + j] + c] = v;
                logical[w][j][c] = mma_check_bits(v);
            }
        }
    }
    __nv_bfloat16 *d_buffer = to_device(buffer, W * MMA_CHECK_LD_BUF);
    int *d_offset = to_device(offset, W * 32);
    uint32_t *d_out, out[W * 32 * 4];
    CUDA_CHECK(cudaMalloc(&d_out, sizeof(out)));
    mma_check_ldmatrix_kernel<COUNT, TRANS>
        <<<1, 32 * W, W * MMA_CHECK_LD_BUF * sizeof(__nv_bfloat16)>>>(d_out, d_buffer, d_offset);
    CUDA_CHECK_LAUNCH();
    mma_check_download(out, d_out, W * 32 * 4);
    // lane l, register i: row l/4, columns 2 (l%4) and 2 (l%4) + 1 of matrix i (of its transpose)
    int right = 0, total = 0;
    for (int w = 0; w < W; w++) {
        for (int l = 0; l < 32; l++) {
            for (int i = 0; i < COUNT; i++) {
                const int a = l / 4, b = 2 * (l % 4);
                const uint16_t lo = TRANS ? logical[w][8 * i + b][a] : logical[w][8 * i + a][b];
                const uint16_t hi = TRANS ? logical[w][8 * i + b + 1][a] : logical[w][8 * i + a][b + 1];
                right += out[(w * 32 + l) * 4 + i] == ((uint32_t)lo | (uint32_t)hi << 16);
                total++;
            }
        }
    }
    printf("check ldmatrix.x%d%s: %d of %d registers as the ISA lays them out %s\n", COUNT,
           TRANS ? ".trans" : "", right, total, right == total ? "ok" : "FAIL");
    void *dev[] = {d_buffer, d_offset, d_out};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
    return right == total;
}

// four checks: S (with its bf16 store), O, Ot, the pair loads; returns how many passed
static int mma_check_helpers(DevRng *rng) {
    const int W = MMA_CHECK_WARPS;
    __nv_bfloat16 Q[W * 512], K[W * 512], V[W * 256], Sb[W * 256];
    float S[W * 256], O[W * 256], Ot[W * 256], S2[W * 256], O2[W * 256];
    for (int i = 0; i < W * 512; i++) Q[i] = mma_check_random_bf16(rng);
    for (int i = 0; i < W * 512; i++) K[i] = mma_check_random_bf16(rng);
    for (int i = 0; i < W * 256; i++) V[i] = mma_check_random_bf16(rng);
    __nv_bfloat16 *dQ = to_device(Q, W * 512), *dK = to_device(K, W * 512), *dV = to_device(V, W * 256);
    __nv_bfloat16 *dSb;
    float *dS, *dO, *dOt, *dS2, *dO2;
    CUDA_CHECK(cudaMalloc(&dS2, W * 256 * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dO2, W * 256 * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dSb, W * 256 * sizeof(__nv_bfloat16)));
    CUDA_CHECK(cudaMalloc(&dS, W * 256 * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dO, W * 256 * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dOt, W * 256 * sizeof(float)));
    mma_check_helpers_kernel<<<1, 32 * W>>>(dS, dSb, dO, dOt, dS2, dO2, dQ, dK, dV);
    CUDA_CHECK_LAUNCH();
    mma_check_download(S, dS, W * 256);
    mma_check_download(Sb, dSb, W * 256);
    mma_check_download(O, dO, W * 256);
    mma_check_download(Ot, dOt, W * 256);
    mma_check_download(S2, dS2, W * 256);
    mma_check_download(O2, dO2, W * 256);
    double ref[W * 256], abs_sum[W * 256];
    for (int w = 0; w < W; w++) {
        for (int m = 0; m < 16; m++) {
            for (int n = 0; n < 16; n++) {
                const int i = w * 256 + m * 16 + n;
                ref[i] = abs_sum[i] = 0.0;
                for (int d = 0; d < 32; d++) {
                    const double p = (double)__bfloat162float(Q[w * 512 + m * 32 + d]) *
                                     (double)__bfloat162float(K[w * 512 + n * 32 + d]);
                    ref[i] += p;
                    abs_sum[i] += fabs(p);
                }
            }
        }
    }
    int unrounded = 0; // the bf16 store must be the fp32 one rounded to nearest even
    for (int i = 0; i < W * 256; i++) {
        unrounded += mma_check_bits(Sb[i]) != mma_check_bits(__float2bfloat16(S[i]));
    }
    char extra[96];
    snprintf(extra, sizeof(extra), ", %d bf16 stores not the fp32 one rounded", unrounded);
    const int ok_s = mma_check_close("mma_load_a, mma_load_b_nk, mma_store_c (S = Q K^T)", S, ref,
                                     abs_sum, W * 256, 32, extra, unrounded == 0);
    // O against P = bf16 of the S that came back, so a check of O is one of P V alone
    for (int w = 0; w < W; w++) {
        for (int m = 0; m < 16; m++) {
            for (int n = 0; n < 16; n++) {
                const int i = w * 256 + m * 16 + n;
                ref[i] = abs_sum[i] = 0.0;
                for (int k = 0; k < 16; k++) {
                    const double p = (double)__bfloat162float(__float2bfloat16(S[w * 256 + m * 16 + k])) *
                                     (double)__bfloat162float(V[w * 256 + k * 16 + n]);
                    ref[i] += p;
                    abs_sum[i] += fabs(p);
                }
            }
        }
    }
    const int ok_o = mma_check_close("mma_a_from_c, mma_load_b_kn (O = bf16(S) V)", O, ref, abs_sum,
                                     W * 256, 16);
    for (int w = 0; w < W; w++) { // Ot[m][n] = sum_k bf16(S)[k][m] V[k][n]
        for (int m = 0; m < 16; m++) {
            for (int n = 0; n < 16; n++) {
                const int i = w * 256 + m * 16 + n;
                ref[i] = abs_sum[i] = 0.0;
                for (int k = 0; k < 16; k++) {
                    const double p = (double)__bfloat162float(__float2bfloat16(S[w * 256 + k * 16 + m])) *
                                     (double)__bfloat162float(V[w * 256 + k * 16 + n]);
                    ref[i] += p;
                    abs_sum[i] += fabs(p);
                }
            }
        }
    }
    const int ok_t = mma_check_close("mma_load_a_trans (Ot = bf16(S)^T V)", Ot, ref, abs_sum,
                                     W * 256, 16);
    // the pair loads hand the mma the same fragments as the x2 loads checked
    // above, so the same products bit for bit (S2 = S, O2 = O)
    int differ = 0;
    for (int i = 0; i < W * 256; i++) differ += memcmp(&S2[i], &S[i], 4) != 0 || memcmp(&O2[i], &O[i], 4) != 0;
    // (named so that EMU_MMA_MUTATION=no-trans, which breaks both loads alike, expects it to pass)
    printf("check x4 B fragment pairs (mma.cuh's nk_pair, kn_pair): %d of %d elements of S and O "
           "differ from the x2 loads' %s\n", differ, W * 256, differ ? "FAIL" : "ok");
    void *dev[] = {dQ, dK, dV, dSb, dS, dO, dOt, dS2, dO2};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
    return ok_s + ok_o + ok_t + (differ == 0);
}

// every check; prints a summary line and returns how many failed
static int mma_check_all(DevRng *rng) {
    const int total = 11;
    int passed = mma_check_registers(rng);
    passed += mma_check_ldmatrix<1, false>(rng);
    passed += mma_check_ldmatrix<1, true>(rng);
    passed += mma_check_ldmatrix<2, false>(rng);
    passed += mma_check_ldmatrix<2, true>(rng);
    passed += mma_check_ldmatrix<4, false>(rng);
    passed += mma_check_ldmatrix<4, true>(rng);
    passed += mma_check_helpers(rng);
    printf("mma checks: %d of %d failed\n", total - passed, total);
    return total - passed;
}

#endif
