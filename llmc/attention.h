// Causal multi-head self-attention. qkv (B, T, 3C) holds q, k, v in that
// order, each split into NH heads of size C/NH. att (B, NH, T, T) keeps the
// softmax probabilities for the backward pass; out (B, T, C).
#ifndef FOLDNORM_ATTENTION_H
#define FOLDNORM_ATTENTION_H

void attention_forward(float *out, float *att, const float *qkv, int B, int T, int C, int NH);
// Accumulates into dqkv (B, T, 3C).
void attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att, int B,
                        int T, int C, int NH);

#endif
