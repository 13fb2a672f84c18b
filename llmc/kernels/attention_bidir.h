// Bidirectional multi-head self-attention over groups of T tokens (a ViT
// image, or one Swin window). qkv (rows, 3C) holds q, k, v in that order,
// each split into NH heads of size C/NH; att (G, NH, T, T) keeps the softmax
// probabilities for the backward pass; out (rows, C).
// Group g's token t is row g*T + t, or with a token map (Swin's windows:
// cyclic shift + window partition read in place, map_groups windows of T
// tokens per image) row (g / map_groups) * map_groups * T + token_map[(g % map_groups) * T + t].
// An optional additive score bias (Swin's relative position bias plus the
// shifted-window mask) has shape (num_bias, NH, T, T); group g reads slot
// g % num_bias:  att = softmax(q k^T / sqrt(hs) + bias).
#ifndef FOLDNORM_ATTENTION_BIDIR_H
#define FOLDNORM_ATTENTION_BIDIR_H

// bias may be NULL (num_bias is then ignored); token_map may be NULL
// (map_groups is then ignored). Writes every row of out that a group reads.
void attention_bidir_forward(float *out, float *att, const float *qkv, const float *bias,
                             int num_bias, const int *token_map, int map_groups, int G, int T,
                             int C, int NH);
// Writes (overwrites) dqkv for every row a group reads. When dscore_sum is
// not NULL it receives (overwrites) the score gradients summed over the G
// groups, (NH, T, T): the gradient of a bias shared by all groups (Swin's
// relative position bias; the mask is constant).
void attention_bidir_backward(float *dqkv, float *dscore_sum, const float *dout, const float *qkv,
                              const float *att, const int *token_map, int map_groups, int G,
                              int T, int C, int NH);

#endif
