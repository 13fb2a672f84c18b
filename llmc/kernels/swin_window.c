#include "swin_window.h"

#include <stddef.h>
#include <string.h>

void swin_window_perm(int *perm, int res, int W, int shift) {
    const int per_side = res / W, T = W * W;
    for (int wy = 0; wy < per_side; wy++) {
        for (int wx = 0; wx < per_side; wx++) {
            for (int iy = 0; iy < W; iy++) {
                for (int ix = 0; ix < W; ix++) {
                    int j = (wy * per_side + wx) * T + iy * W + ix;
                    int y = (wy * W + iy + shift) % res, x = (wx * W + ix + shift) % res;
                    perm[j] = y * res + x;
                }
            }
        }
    }
}

void swin_relative_index(int *rel_index, int W) {
    const int T = W * W;
    for (int i = 0; i < T; i++) {
        for (int j = 0; j < T; j++) {
            int dy = i / W - j / W + W - 1, dx = i % W - j % W + W - 1;
            rel_index[i * T + j] = dy * (2 * W - 1) + dx;
        }
    }
}

// region of a coordinate of the shifted frame: 3 bands per axis
static int shift_band(int v, int res, int W, int shift) {
    return v < res - W ? 0 : v < res - shift ? 1 : 2;
}

void swin_shift_mask(float *mask, int res, int W, int shift) {
    const int per_side = res / W, T = W * W, nW = per_side * per_side;
    for (int w = 0; w < nW; w++) {
        int wy = w / per_side, wx = w % per_side;
        for (int i = 0; i < T; i++) {
            for (int j = 0; j < T; j++) {
                int yi = wy * W + i / W, xi = wx * W + i % W;
                int yj = wy * W + j / W, xj = wx * W + j % W;
                int li = shift_band(yi, res, W, shift) * 3 + shift_band(xi, res, W, shift);
                int lj = shift_band(yj, res, W, shift) * 3 + shift_band(xj, res, W, shift);
                mask[((size_t)w * T + i) * T + j] = li == lj ? 0.0f : SWIN_MASK_VALUE;
            }
        }
    }
}

void swin_score_bias(float *bias, const float *table, const int *rel_index, const float *mask,
                     int nbias, int NH, int T) {
    for (int w = 0; w < nbias; w++) {
        for (int h = 0; h < NH; h++) {
            float *dst = bias + ((size_t)w * NH + h) * T * T;
            for (int ij = 0; ij < T * T; ij++) {
                dst[ij] = table[(size_t)rel_index[ij] * NH + h] +
                          (mask != NULL ? mask[(size_t)w * T * T + ij] : 0.0f);
            }
        }
    }
}

void swin_bias_table_backward(float *dtable, const float *dscore_sum, const int *rel_index,
                              int NH, int T) {
    for (int h = 0; h < NH; h++) {
        for (int ij = 0; ij < T * T; ij++) {
            dtable[(size_t)rel_index[ij] * NH + h] += dscore_sum[(size_t)h * T * T + ij];
        }
    }
}

// merged row (b, t, part) <-> image token (b, 2y + dy, 2x + dx), dy = part & 1, dx = part >> 1
static size_t merge_source_row(int b, int t, int part, int res_out) {
    const int res_in = 2 * res_out, y = t / res_out, x = t % res_out;
    return ((size_t)b * res_in + 2 * y + (part & 1)) * res_in + 2 * x + (part >> 1);
}

void swin_patch_merge_forward(float *merged, const float *x, int B, int res_out, int C) {
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < res_out * res_out; t++) {
            for (int part = 0; part < 4; part++) {
                float *m = merged + (((size_t)b * res_out * res_out + t) * 4 + part) * C;
                memcpy(m, x + merge_source_row(b, t, part, res_out) * C, (size_t)C * sizeof(float));
            }
        }
    }
}

void swin_patch_merge_backward(float *dx, const float *dmerged, int B, int res_out, int C) {
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < res_out * res_out; t++) {
            for (int part = 0; part < 4; part++) {
                const float *m = dmerged + (((size_t)b * res_out * res_out + t) * 4 + part) * C;
                float *d = dx + merge_source_row(b, t, part, res_out) * C;
                memcpy(d, m, (size_t)C * sizeof(float));
            }
        }
    }
}
