// LayerNorm and RMSNorm over the last axis of (N, C), both with gain and bias
// (cbwc-math.md section 1), eps = 1e-5. The per-row statistics kept for the
// backward pass are rstd (both) and mean (LayerNorm only).
#ifndef FOLDNORM_NORM_H
#define FOLDNORM_NORM_H

#define NORM_EPS 1e-5f

typedef enum { NORM_LAYER = 0, NORM_RMS = 1 } NormKind;

// LN: y = g (x - mu) / sqrt(var + eps) + b
void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *gain,
                       const float *bias, int N, int C);
void layernorm_backward(float *dinp, float *dgain, float *dbias, const float *dout,
                        const float *inp, const float *gain, const float *mean,
                        const float *rstd, int N, int C);

// RMS: y = g x / sqrt(mean(x^2) + eps) + b
void rmsnorm_forward(float *out, float *rstd, const float *inp, const float *gain,
                     const float *bias, int N, int C);
void rmsnorm_backward(float *dinp, float *dgain, float *dbias, const float *dout,
                      const float *inp, const float *gain, const float *rstd, int N, int C);

// Deterministic row chunks for the gain/bias gradient sums (norm.c): a
// backward kernel sums chunk k's rows into partials [k][0..1][C], then
// norm_partials_reduce adds the chunks in order into dgain, dbias and frees.
int norm_num_chunks(int N);
void norm_chunk_rows(int chunk, int num_chunks, int N, int *row_begin, int *row_end);
float *norm_partials_alloc(int num_chunks, int C);
void norm_partials_reduce(float *dgain, float *dbias, float *partials, int num_chunks, int C);

// Dispatch on the kind; mean is ignored for NORM_RMS.
void norm_forward(NormKind kind, float *out, float *mean, float *rstd, const float *inp,
                  const float *gain, const float *bias, int N, int C);
void norm_backward(NormKind kind, float *dinp, float *dgain, float *dbias, const float *dout,
                   const float *inp, const float *gain, const float *mean, const float *rstd,
                   int N, int C);

#endif
