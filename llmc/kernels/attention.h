// Causal multi-head self-attention, blocked with an online softmax (flash
// attention on the CPU, docs/math.md section 7). qkv (B, T, 3C) holds q, k, v
// in that order, each split into NH heads of size C/NH; out (B, T, C). No
// T x T matrix is kept: the forward leaves lse (B, NH, T), the logsumexp of
// each row's scaled scores, and the backward recomputes the probabilities
// block by block from q, k and lse.
#ifndef FOLDNORM_ATTENTION_H
#define FOLDNORM_ATTENTION_H

// Query and key positions per block (the last block of a row may be shorter).
#define ATTENTION_BLOCK 64

void attention_forward(float *out, float *lse, const float *qkv, int B, int T, int C, int NH);
// The attention outputs of the n rows t0 .. t0+n-1 only, each against the
// keys and values of rows 0 .. t (generation with a KV cache: the rows before
// t0 are earlier positions' q, k, v). qkv (t0 + n, 3C), out (n, C); no lse.
void attention_forward_rows(float *out, const float *qkv, int t0, int n, int C, int NH);
// Accumulates into dqkv (B, T, 3C); out and lse are the forward's.
void attention_backward(float *dqkv, const float *dout, const float *qkv, const float *out,
                        const float *lse, int B, int T, int C, int NH);

#endif
