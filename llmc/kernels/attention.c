#include "attention.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "fast_exp.h"
#include "core/utils.h"

enum { BLK = ATTENTION_BLOCK };

static int block_len(int start, int T) {
    return T - start < BLK ? T - start : BLK;
}

// kt[d * BLK + c] = x[c * stride + d] for the n rows of a key (or value)
// block, so that the score loops below run over c, contiguous.
static void transpose_block(float *restrict kt, const float *restrict x, size_t stride, int n,
                            int hs) {
    for (int c = 0; c < n; c++) {
        for (int d = 0; d < hs; d++) {
            kt[(size_t)d * BLK + c] = x[(size_t)c * stride + d];
        }
    }
}

// s[c] = scale * (a . x_c) for the rows x_c of a block held transposed in xt,
// computed for the first `width` columns (a compile-time 32 or 64 after
// inlining, so the accumulators stay in registers); columns past the block's
// rows hold stale finite values and are ignored by the callers.
static inline void block_dots(float *restrict s, const float *restrict a,
                              const float *restrict xt, int hs, float scale, int width) {
    float acc[BLK];
#pragma omp simd
    for (int c = 0; c < width; c++) {
        acc[c] = 0.0f;
    }
    for (int d = 0; d < hs; d++) {
        const float ad = a[d];
        const float *restrict row = xt + (size_t)d * BLK;
#pragma omp simd
        for (int c = 0; c < width; c++) {
            acc[c] += ad * row[c];
        }
    }
#pragma omp simd
    for (int c = 0; c < width; c++) {
        s[c] = acc[c] * scale;
    }
}

// block_dots over at least the first n columns.
static void row_dots(float *restrict s, const float *restrict a, const float *restrict xt, int n,
                     int hs, float scale) {
    if (n <= BLK / 2) {
        block_dots(s, a, xt, hs, scale, BLK / 2);
    } else {
        block_dots(s, a, xt, hs, scale, BLK);
    }
}

// y += alpha * x over n floats.
static void axpy(float *restrict y, float alpha, const float *restrict x, int n) {
#pragma omp simd
    for (int i = 0; i < n; i++) {
        y[i] += alpha * x[i];
    }
}

enum { ROW_CHUNK = 64 };

// y[0, hs) += sum over c < n of w[c] x_c, x_c = x + c stride: y is held in
// registers ROW_CHUNK floats at a time while the rows stream past.
static void weighted_row_sum(float *restrict y, const float *restrict w, const float *restrict x,
                             size_t stride, int n, int hs) {
    int d0 = 0;
    for (; d0 + ROW_CHUNK <= hs; d0 += ROW_CHUNK) {
        float acc[ROW_CHUNK];
#pragma omp simd
        for (int j = 0; j < ROW_CHUNK; j++) {
            acc[j] = y[d0 + j];
        }
        for (int c = 0; c < n; c++) {
            const float wc = w[c];
            const float *restrict xr = x + (size_t)c * stride + d0;
#pragma omp simd
            for (int j = 0; j < ROW_CHUNK; j++) {
                acc[j] += wc * xr[j];
            }
        }
#pragma omp simd
        for (int j = 0; j < ROW_CHUNK; j++) {
            y[d0 + j] = acc[j];
        }
    }
    if (d0 < hs) {
        for (int c = 0; c < n; c++) {
            axpy(y + d0, w[c], x + (size_t)c * stride + d0, hs - d0);
        }
    }
}

// Per row t: m = running max of the scaled scores, l = sum exp(s - m), o =
// sum exp(s - m) v, each rescaled by exp(m_old - m_new) when the max grows;
// out = o / l and lse = m + log l once every key block u <= t is seen.
void attention_forward(float *out, float *lse, const float *qkv, int B, int T, int C, int NH) {
    const int hs = C / NH;
    const size_t C3 = (size_t)C * 3;
    const float scale = 1.0f / sqrtf((float)hs);
    const int nblocks = (T + BLK - 1) / BLK;
#pragma omp parallel
    {
        const size_t block_floats = (size_t)BLK * hs;
        float *kt = calloc_check(block_floats, sizeof(float), "attention forward scratch");
        float *o = malloc_check(block_floats * sizeof(float), "attention forward scratch");
        float s[BLK], m[BLK], l[BLK];
#pragma omp for collapse(3) schedule(dynamic)
        for (int b = 0; b < B; b++) {
            for (int h = 0; h < NH; h++) {
                for (int qb = 0; qb < nblocks; qb++) {
                    const float *base = qkv + (size_t)b * T * C3 + (size_t)h * hs;
                    const int q0 = qb * BLK, nq = block_len(q0, T);
                    for (int r = 0; r < nq; r++) {
                        m[r] = -INFINITY;
                        l[r] = 0.0f;
                    }
                    memset(o, 0, (size_t)nq * hs * sizeof(float));
                    for (int kb = 0; kb <= qb; kb++) {
                        const int k0 = kb * BLK, nk = block_len(k0, T);
                        transpose_block(kt, base + (size_t)k0 * C3 + C, C3, nk, hs);
                        for (int r = 0; r < nq; r++) {
                            const int t = q0 + r;
                            const int n = t - k0 + 1 < nk ? t - k0 + 1 : nk; // causal: u <= t
                            row_dots(s, base + (size_t)t * C3, kt, n, hs, scale);
                            float mx = m[r];
#pragma omp simd reduction(max : mx)
                            for (int c = 0; c < n; c++) {
                                mx = s[c] > mx ? s[c] : mx;
                            }
                            const float rescale = m[r] == -INFINITY ? 0.0f : fast_expf(m[r] - mx);
                            float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
                            for (int c = 0; c < n; c++) {
                                s[c] = fast_expf(s[c] - mx);
                                sum += s[c];
                            }
                            l[r] = l[r] * rescale + sum;
                            m[r] = mx;
                            float *orow = o + (size_t)r * hs;
                            for (int d = 0; d < hs; d++) {
                                orow[d] *= rescale;
                            }
                            weighted_row_sum(orow, s, base + (size_t)k0 * C3 + 2 * (size_t)C, C3, n,
                                             hs);
                        }
                    }
                    for (int r = 0; r < nq; r++) {
                        const int t = q0 + r;
                        float *y = out + ((size_t)b * T + t) * C + (size_t)h * hs;
                        const float inv = 1.0f / l[r];
                        for (int d = 0; d < hs; d++) {
                            y[d] = o[(size_t)r * hs + d] * inv;
                        }
                        lse[((size_t)b * NH + h) * T + t] = m[r] + logf(l[r]);
                    }
                }
            }
        }
        free(kt);
        free(o);
    }
}

// With p = exp(s - lse) recomputed per block and D_t = dout_t . out_t
// (= sum_u p_tu dp_tu): dp = dout v^T, ds = p (dp - D), dq = scale ds k,
// dk = scale ds^T q, dv = p^T dout. Key blocks outer (dk, dv summed locally),
// query blocks inner; parallel over (b, h), each pair owning its dqkv slices.
void attention_backward(float *dqkv, const float *dout, const float *qkv, const float *out,
                        const float *lse, int B, int T, int C, int NH) {
    const int hs = C / NH;
    const size_t C3 = (size_t)C * 3;
    const float scale = 1.0f / sqrtf((float)hs);
    const int nblocks = (T + BLK - 1) / BLK;
#pragma omp parallel
    {
        const size_t block_floats = (size_t)BLK * hs;
        const char *what = "attention backward scratch";
        float *kt = calloc_check(block_floats, sizeof(float), what); // zeroed: padding is finite
        float *vt = calloc_check(block_floats, sizeof(float), what);
        float *dk = malloc_check(block_floats * sizeof(float), what);
        float *dv = malloc_check(block_floats * sizeof(float), what);
        float *D = malloc_check((size_t)T * sizeof(float), what);
        float p[BLK], ds[BLK];
#pragma omp for collapse(2) schedule(dynamic)
        for (int b = 0; b < B; b++) {
            for (int h = 0; h < NH; h++) {
                const size_t head = (size_t)b * T * C3 + (size_t)h * hs;
                const float *base = qkv + head;
                float *dbase = dqkv + head;
                const float *row_lse = lse + ((size_t)b * NH + h) * T;
                for (int t = 0; t < T; t++) {
                    const float *dy = dout + ((size_t)b * T + t) * C + (size_t)h * hs;
                    const float *y = out + ((size_t)b * T + t) * C + (size_t)h * hs;
                    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
                    for (int d = 0; d < hs; d++) {
                        dot += dy[d] * y[d];
                    }
                    D[t] = dot;
                }
                for (int kb = 0; kb < nblocks; kb++) {
                    const int k0 = kb * BLK, nk = block_len(k0, T);
                    transpose_block(kt, base + (size_t)k0 * C3 + C, C3, nk, hs);
                    transpose_block(vt, base + (size_t)k0 * C3 + 2 * (size_t)C, C3, nk, hs);
                    memset(dk, 0, (size_t)nk * hs * sizeof(float));
                    memset(dv, 0, (size_t)nk * hs * sizeof(float));
                    for (int t = k0; t < T; t++) {
                        const int n = t - k0 + 1 < nk ? t - k0 + 1 : nk; // causal: u <= t
                        const float *q = base + (size_t)t * C3;
                        const float *dy = dout + ((size_t)b * T + t) * C + (size_t)h * hs;
                        row_dots(p, q, kt, n, hs, scale);
                        const float m = row_lse[t];
#pragma omp simd
                        for (int c = 0; c < n; c++) {
                            p[c] = fast_expf(p[c] - m);
                        }
                        row_dots(ds, dy, vt, n, hs, 1.0f);
                        const float Dt = D[t];
#pragma omp simd
                        for (int c = 0; c < n; c++) {
                            ds[c] = p[c] * (ds[c] - Dt) * scale;
                        }
                        for (int c = 0; c < n; c++) {
                            axpy(dv + (size_t)c * hs, p[c], dy, hs);
                            axpy(dk + (size_t)c * hs, ds[c], q, hs);
                        }
                        weighted_row_sum(dbase + (size_t)t * C3, ds, base + (size_t)k0 * C3 + C, C3,
                                         n, hs);
                    }
                    for (int c = 0; c < nk; c++) {
                        float *krow = dbase + (size_t)(k0 + c) * C3 + C;
                        axpy(krow, 1.0f, dk + (size_t)c * hs, hs);
                        axpy(krow + C, 1.0f, dv + (size_t)c * hs, hs);
                    }
                }
            }
        }
        free(kt);
        free(vt);
        free(dk);
        free(dv);
        free(D);
    }
}

// One (query row, head) pair at a time: s_u = scale q . k_u for u <= t,
// p_u = exp(s_u - max s) / sum, out = sum_u p_u v_u (the same function as
// attention_forward's online softmax, summed in a different order).
void attention_forward_rows(float *out, const float *qkv, int t0, int n, int C, int NH) {
    const int hs = C / NH;
    const size_t C3 = (size_t)C * 3;
    const float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel
    {
        float *s = malloc_check((size_t)(t0 + n) * sizeof(float), "attention rows scratch");
#pragma omp for collapse(2) schedule(static)
        for (int r = 0; r < n; r++) {
            for (int h = 0; h < NH; h++) {
                const int t = t0 + r;
                const float *q = qkv + (size_t)t * C3 + (size_t)h * hs;
                const float *keys = qkv + C + (size_t)h * hs;
                const float *values = qkv + 2 * (size_t)C + (size_t)h * hs;
                float mx = -INFINITY;
                for (int u = 0; u <= t; u++) {
                    const float *k = keys + (size_t)u * C3;
                    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
                    for (int d = 0; d < hs; d++) {
                        dot += q[d] * k[d];
                    }
                    s[u] = dot * scale;
                    mx = s[u] > mx ? s[u] : mx;
                }
                float sum = 0.0f;
                for (int u = 0; u <= t; u++) {
                    s[u] = fast_expf(s[u] - mx);
                    sum += s[u];
                }
                float *o = out + (size_t)r * C + (size_t)h * hs;
                memset(o, 0, (size_t)hs * sizeof(float));
                weighted_row_sum(o, s, values, C3, t + 1, hs);
                const float inv = 1.0f / sum;
                for (int d = 0; d < hs; d++) {
                    o[d] *= inv;
                }
            }
        }
        free(s);
    }
}
