#include "attention_bidir.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "fast_exp.h"
#include "tile_gemm.h"
#include "core/utils.h"

// Parallel over the groups. A group's rows of qkv (and of dout) are copied
// once into a contiguous buffer; then for each head its slices of q, k, v go
// into zero-padded tiles, T rounded up to Tp and the head size hs to hsp
// (multiples of 16 floats), and each product (q k^T, att v; in the backward
// dout v^T, dscore k, dscore^T q, att^T dout) runs through tile_gemm
// (tile_gemm.h), whose kernels take N in vectors of 16 floats.

enum { VEC = 16, SCORE_SUM_CHUNKS = 16 };

static int round_up16(int n) {
    return (n + VEC - 1) / VEC * VEC;
}

// Per-thread buffers: the group's rows (of qkv, and of dout or out), and the
// zero-padded tiles of one head.
typedef struct {
    int T, Tp, C, hs, hsp;
    size_t *rows;
    float *win;           // (T, 3C) the group's qkv rows
    float *win_y;         // (T, C) its out (forward) or dout (backward) rows
    float *win_d;         // (T, 3C) its dqkv rows (backward)
    float *x, *y, *z, *w; // (Tp, hsp) each
    float *xt;            // (hsp, Tp)
    float *s, *u;         // (Tp, Tp) each
} Tiles;

static void tiles_alloc(Tiles *t, int T, int C, int hs) {
    t->T = T;
    t->C = C;
    t->hs = hs;
    t->Tp = round_up16(T);
    t->hsp = round_up16(hs);
    size_t th = (size_t)t->Tp * t->hsp, tt = (size_t)t->Tp * t->Tp, tc = (size_t)T * C;
    t->rows = malloc_check((size_t)T * sizeof(size_t), "attention rows");
    // zeroed once: the padding rows and columns stay zero
    t->x = calloc_check(5 * th + 2 * tt + 7 * tc, sizeof(float), "attention tiles");
    t->y = t->x + th;
    t->z = t->y + th;
    t->w = t->z + th;
    t->xt = t->w + th;
    t->s = t->xt + th;
    t->u = t->s + tt;
    t->win = t->u + tt;
    t->win_y = t->win + 3 * tc;
    t->win_d = t->win_y + tc;
}

static void tiles_free(Tiles *t) {
    free(t->rows);
    free(t->x);
}

// Reads the group's rows of src (width ld) into dst (T, ld).
static void group_load(float *dst, const Tiles *t, const float *src, size_t ld) {
    for (int r = 0; r < t->T; r++) {
        memcpy(dst + (size_t)r * ld, src + t->rows[r] * ld, ld * sizeof(float));
    }
}

static void group_store(float *dst, const Tiles *t, const float *src, size_t ld) {
    for (int r = 0; r < t->T; r++) {
        memcpy(dst + t->rows[r] * ld, src + (size_t)r * ld, ld * sizeof(float));
    }
}

static void group_rows(const Tiles *t, const int *token_map, int map_groups, int g) {
    const int T = t->T;
    if (token_map == NULL) {
        for (int r = 0; r < T; r++) {
            t->rows[r] = (size_t)g * T + r;
        }
        return;
    }
    size_t base = (size_t)(g / map_groups) * map_groups * T;
    const int *map = token_map + (size_t)(g % map_groups) * T;
    for (int r = 0; r < T; r++) {
        t->rows[r] = base + (size_t)map[r];
    }
}

// tile (T rows of hsp) <- columns col..col+hs of the (T, ld) group rows, and back
static void tile_in(float *tile, const Tiles *t, const float *win, size_t ld, size_t col) {
    for (int r = 0; r < t->T; r++) {
        const float *x = win + (size_t)r * ld + col;
        float *y = tile + (size_t)r * t->hsp;
        for (int i = 0; i < t->hs; i++) {
            y[i] = x[i];
        }
    }
}

static void tile_out(float *win, const Tiles *t, const float *tile, size_t ld, size_t col) {
    for (int r = 0; r < t->T; r++) {
        const float *x = tile + (size_t)r * t->hsp;
        float *y = win + (size_t)r * ld + col;
        for (int i = 0; i < t->hs; i++) {
            y[i] = x[i];
        }
    }
}

// tile (hsp rows of Tp) <- the same columns, transposed
static void tile_in_transposed(float *tile, const Tiles *t, const float *win, size_t ld,
                               size_t col) {
    for (int r = 0; r < t->T; r++) {
        const float *x = win + (size_t)r * ld + col;
        for (int i = 0; i < t->hs; i++) {
            tile[(size_t)i * t->Tp + r] = x[i];
        }
    }
}

void attention_bidir_forward(float *out, float *att, const float *qkv, const float *bias,
                             int num_bias, const int *token_map, int map_groups, int G, int T,
                             int C, int NH) {
    const int hs = C / NH;
    const size_t C3 = (size_t)C * 3;
    const float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel
    {
        Tiles t;
        tiles_alloc(&t, T, C, hs);
        const int Tp = t.Tp, hsp = t.hsp;
        float *q = t.x, *v = t.y, *o = t.z, *kt = t.xt, *p = t.s;
#pragma omp for schedule(static)
        for (int g = 0; g < G; g++) {
            group_rows(&t, token_map, map_groups, g);
            group_load(t.win, &t, qkv, C3);
            for (int h = 0; h < NH; h++) {
                tile_in(q, &t, t.win, C3, (size_t)h * hs);
                tile_in_transposed(kt, &t, t.win, C3, C + (size_t)h * hs);
                tile_in(v, &t, t.win, C3, 2 * (size_t)C + (size_t)h * hs);
                tile_gemm(p, Tp, q, hsp, 0, kt, Tp, T, Tp, hs, 1.0f, 0); // scores q k^T
                float *a = att + ((size_t)g * NH + h) * T * T;
                const float *b =
                    bias == NULL ? NULL : bias + (((size_t)(g % num_bias)) * NH + h) * T * T;
                for (int r = 0; r < T; r++) {
                    float *row = p + (size_t)r * Tp;
                    float maxval = -INFINITY;
                    if (b != NULL) {
                        const float *bias_row = b + (size_t)r * T;
#pragma omp simd reduction(max : maxval)
                        for (int j = 0; j < T; j++) {
                            row[j] = row[j] * scale + bias_row[j];
                            maxval = row[j] > maxval ? row[j] : maxval;
                        }
                    } else {
#pragma omp simd reduction(max : maxval)
                        for (int j = 0; j < T; j++) {
                            row[j] = row[j] * scale;
                            maxval = row[j] > maxval ? row[j] : maxval;
                        }
                    }
                    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
                    for (int j = 0; j < T; j++) {
                        row[j] = fast_expf(row[j] - maxval);
                        sum += row[j];
                    }
                    const float inv = 1.0f / sum;
#pragma omp simd
                    for (int j = 0; j < T; j++) {
                        row[j] *= inv;
                        a[(size_t)r * T + j] = row[j];
                    }
                }
                // the padding columns of p are zero (from the zero columns of kt)
                tile_gemm(o, hsp, p, Tp, 0, v, hsp, T, hsp, T, 1.0f, 0); // att v
                tile_out(t.win_y, &t, o, (size_t)C, (size_t)h * hs);
            }
            group_store(out, &t, t.win_y, (size_t)C);
        }
        tiles_free(&t);
    }
}

// datt = dout v^T, dscore = att * (datt - rowsum(att * datt)), dq = scale dscore k,
// dk = scale dscore^T q, dv = att^T dout: group g's rows of dqkv, written
// once; the score gradients added into sum (NH, T, T) when it is not NULL.
static void group_backward(Tiles *t, float *dqkv, float *sum, const float *dout, const float *qkv,
                           const float *att, const int *token_map, int map_groups, int g, int NH,
                           float scale) {
    const int T = t->T, Tp = t->Tp, C = t->C, hs = t->hs, hsp = t->hsp;
    const size_t C3 = (size_t)C * 3;
    float *qk = t->x, *dy = t->y, *res = t->z, *vt = t->xt, *p = t->s, *ds = t->u;
    group_rows(t, token_map, map_groups, g);
    group_load(t->win, t, qkv, C3);
    group_load(t->win_y, t, dout, (size_t)C);
    for (int h = 0; h < NH; h++) {
        const float *a = att + ((size_t)g * NH + h) * T * T;
        tile_in(dy, t, t->win_y, (size_t)C, (size_t)h * hs);
        tile_in_transposed(vt, t, t->win, C3, 2 * (size_t)C + (size_t)h * hs);
        tile_gemm(ds, Tp, dy, hsp, 0, vt, Tp, T, Tp, hs, 1.0f, 0); // datt = dout v^T
        for (int r = 0; r < T; r++) {
            float *d = ds + (size_t)r * Tp, *pr = p + (size_t)r * Tp;
            const float *ar = a + (size_t)r * T;
            float att_datt = 0.0f;
#pragma omp simd reduction(+ : att_datt)
            for (int j = 0; j < T; j++) {
                pr[j] = ar[j];
                att_datt += ar[j] * d[j];
            }
#pragma omp simd
            for (int j = 0; j < T; j++) {
                d[j] = ar[j] * (d[j] - att_datt);
            }
            if (sum != NULL) {
                float *srow = sum + ((size_t)h * T + r) * T;
#pragma omp simd
                for (int j = 0; j < T; j++) {
                    srow[j] += d[j];
                }
            }
        }
        // ds and p are zero outside the T x T block (zero columns of vt, zero init)
        tile_in(qk, t, t->win, C3, C + (size_t)h * hs); // k
        tile_gemm(res, hsp, ds, Tp, 0, qk, hsp, T, hsp, T, scale, 0); // dq = scale ds k
        tile_out(t->win_d, t, res, C3, (size_t)h * hs);
        tile_in(qk, t, t->win, C3, (size_t)h * hs); // q
        tile_gemm(res, hsp, ds, Tp, 1, qk, hsp, T, hsp, T, scale, 0); // dk = scale ds^T q
        tile_out(t->win_d, t, res, C3, C + (size_t)h * hs);
        tile_gemm(res, hsp, p, Tp, 1, dy, hsp, T, hsp, T, 1.0f, 0); // dv = att^T dout
        tile_out(t->win_d, t, res, C3, 2 * (size_t)C + (size_t)h * hs);
    }
    group_store(dqkv, t, t->win_d, C3);
}

// The score-gradient sum over groups goes by fixed chunks of groups (each
// summed in group order, then the chunks in order): the same sums for any
// thread count, and no (G, NH, T, T) array in memory.
void attention_bidir_backward(float *dqkv, float *dscore_sum, const float *dout, const float *qkv,
                              const float *att, const int *token_map, int map_groups, int G,
                              int T, int C, int NH) {
    const int hs = C / NH;
    const size_t block = (size_t)NH * T * T;
    const float scale = 1.0f / sqrtf((float)hs);
    const int chunks = dscore_sum == NULL ? G : G < SCORE_SUM_CHUNKS ? G : SCORE_SUM_CHUNKS;
    float *partial = dscore_sum == NULL
                         ? NULL
                         : calloc_check((size_t)chunks * block, sizeof(float), "score sums");
#pragma omp parallel
    {
        Tiles t;
        tiles_alloc(&t, T, C, hs);
#pragma omp for schedule(static)
        for (int c = 0; c < chunks; c++) {
            float *sum = partial == NULL ? NULL : partial + (size_t)c * block;
            int g0 = (int)((long)G * c / chunks), g1 = (int)((long)G * (c + 1) / chunks);
            for (int g = g0; g < g1; g++) {
                group_backward(&t, dqkv, sum, dout, qkv, att, token_map, map_groups, g, NH, scale);
            }
        }
        tiles_free(&t);
    }
    if (partial != NULL) {
        for (size_t i = 0; i < block; i++) {
            float total = partial[i];
            for (int c = 1; c < chunks; c++) {
                total += partial[(size_t)c * block + i];
            }
            dscore_sum[i] = total;
        }
        free(partial);
    }
}
