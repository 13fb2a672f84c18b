// Bidirectional multi-head self-attention over groups of T tokens (a ViT
// image, or one Swin window). qkv (G, T, 3C) holds q, k, v in that order,
// each split into NH heads of size C/NH; att (G, NH, T, T) keeps the softmax
// probabilities for the backward pass; out (G, T, C).
// An optional additive score bias (Swin's relative position bias plus the
// shifted-window mask) has shape (num_bias, NH, T, T); group g reads slot
// g % num_bias:  att = softmax(q k^T / sqrt(hs) + bias).
#ifndef FOLDNORM_ATTENTION_BIDIR_H
#define FOLDNORM_ATTENTION_BIDIR_H

// bias may be NULL (num_bias is then ignored).
void attention_bidir_forward(float *out, float *att, const float *qkv, const float *bias,
                             int num_bias, int G, int T, int C, int NH);
// Accumulates into dqkv (G, T, 3C). When dscores is not NULL it receives
// (overwrites) the score gradients (G, NH, T, T), from which the caller sums
// the bias gradient.
void attention_bidir_backward(float *dqkv, float *dscores, const float *dout, const float *qkv,
                              const float *att, int G, int T, int C, int NH);

#endif
