// Swin's window bookkeeping on the CPU (Liu et al. 2021, the official code's
// conventions): the window-order -> image-token permutation (cyclic shift by
// -shift, then window partition), the relative position index into the bias
// table, the shifted-window mask, the score bias built from them, the bias
// table's gradient, and PatchMerging's 2x2 gather. swin.c uses them; the CUDA
// kernels (swin_window_attention.cuh, swin_patch_merge.cuh) compute the same
// by index arithmetic and are checked against them (dev/cuda/swin_*.cu).
// Images are res x res tokens, windows W x W (res a multiple of W), T = W*W
// tokens a window, nW = (res/W)^2 windows an image; the bias table is
// ((2W-1)^2, NH), row dy*(2W-1)+dx for the offset (dy, dx) + (W-1, W-1).
#ifndef FOLDNORM_SWIN_WINDOW_H
#define FOLDNORM_SWIN_WINDOW_H

#define SWIN_MASK_VALUE (-100.0f) // the official code's mask for cross-region pairs

// perm (res*res): window-order token w*T + t -> image token y*res + x
void swin_window_perm(int *perm, int res, int W, int shift);
// rel_index (T*T): pair (i, j) of a window -> its row of the bias table
void swin_relative_index(int *rel_index, int W);
// mask (nW, T, T): 0 within a region of the shifted frame, SWIN_MASK_VALUE across (shift > 0)
void swin_shift_mask(float *mask, int res, int W, int shift);
// bias (nbias, NH, T, T) = table[rel_index[ij]][h] (+ mask[w][ij] when mask != NULL)
void swin_score_bias(float *bias, const float *table, const int *rel_index, const float *mask,
                     int nbias, int NH, int T);
// dtable[rel_index[ij]][h] += dscore_sum[h][ij] (the score gradients summed over windows)
void swin_bias_table_backward(float *dtable, const float *dscore_sum, const int *rel_index,
                              int NH, int T);
// PatchMerging's gather: merged (B, res_out^2, 4, C) <- x (B, (2 res_out)^2, C), parts in the
// official order (dy, dx) = (0,0), (1,0), (0,1), (1,1); and its adjoint (a permutation:
// dx is overwritten).
void swin_patch_merge_forward(float *merged, const float *x, int B, int res_out, int C);
void swin_patch_merge_backward(float *dx, const float *dmerged, int B, int res_out, int C);

#endif
