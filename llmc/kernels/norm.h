// LayerNorm and RMSNorm over the last axis of (N, C), both with gain and bias
// (docs/math.md section 1), eps = 1e-5, as one kernel (norm.c). The per-row
// statistics kept for the backward pass are rstd (both) and mean (LayerNorm only).
//   LN:   y = g (x - mu) / sqrt(var + eps) + b
//   RMS:  y = g x / sqrt(mean(x^2) + eps) + b
//   pRMS: y = g x / sqrt(mean(x_1^2 .. x_k^2) + eps) + b, k = norm_partial_features
//         (partial RMSNorm: the RMS of the first k features scales all C)
#ifndef FOLDNORM_NORM_H
#define FOLDNORM_NORM_H

#include "core/norm_mode.h" // NormKind: what a norm mode asks of this kernel

#define NORM_EPS 1e-5f
#define NORM_LAYER ((NormKind){.centre = true, .partial_share = 0.0f})
#define NORM_RMS ((NormKind){.centre = false, .partial_share = 0.0f})

// k of partial RMSNorm: ceil(share C), at least 1; C for a full norm.
int norm_partial_features(NormKind kind, int C);

// mean is neither written nor read without centring (NORM_RMS; may be NULL).
void norm_forward(NormKind kind, float *out, float *mean, float *rstd, const float *inp,
                  const float *gain, const float *bias, int N, int C);
// Adds to dinp, dgain and dbias. The gain/bias sums run over fixed row chunks
// added in order: the same result for any number of threads.
void norm_backward(NormKind kind, float *dinp, float *dgain, float *dbias, const float *dout,
                   const float *inp, const float *gain, const float *mean, const float *rstd,
                   int N, int C);

#endif
