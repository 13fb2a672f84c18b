// One pre-norm transformer block on the CPU (the twin of
// cuda/transformer_block.cuh), for GPT-2 (gpt2.c, kv_cache.c), ViT and Swin:
//   x2 = x + branch_0(proj(attention(qkv(norm1(x)))))
//   out = x2 + branch_1(fc2(gelu(fc(norm2(x2)))))
// The models' differences are parameters: the attention (causal, or full
// over sequences or Swin's windows), the residual branch (a fused add,
// drop-path, residual dropout), CBWC on proj and fc2, the matmul precision.
#ifndef FOLDNORM_TRANSFORMER_BLOCK_H
#define FOLDNORM_TRANSFORMER_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "matmul.h"
#include "norm.h"

// A weight matrix: the fp32 master and its bf16 copy when the matmuls run in bf16 (else NULL).
typedef struct {
    const float *fp32;
    const uint16_t *bf16;
} LinearWeight;
LinearWeight linear_weight_at(LinearWeight w, size_t offset); // from element offset on

// out = [residual +] inp W^T + bias through mm (NULL: matmul.h's fp32 functions).
void linear_forward(MatmulEngine *mm, float *out, const float *residual, const float *inp,
                    LinearWeight W, const float *bias, int N, int IC, int OC);
// dinp = dout W (written; may be NULL), dW += dout^T inp, dbias += sum dout.
void linear_backward(MatmulEngine *mm, float *dinp, float *dW, float *dbias, const float *dout,
                     const float *inp, LinearWeight W, int N, int IC, int OC);
// linear_backward of a layer writing the residual stream: with centre (CBWC)
// dout is centred first, into scratch (N, OC): dW = P dV, dx = dy V (cbwc.h).
void stream_writer_backward(MatmulEngine *mm, int centre, float *scratch, float *dinp, float *dW,
                            float *dbias, const float *dout, const float *inp, LinearWeight W,
                            int N, int IC, int OC);

typedef struct {
    int causal;    // 1: causal (keeps each row's lse), 0: full (keeps the probabilities)
    int groups, T; // sequences (Swin: windows) of T tokens
    int t0;        // causal with a KV cache: the rows are positions t0.. of one sequence
    int nbias, nW; // full: a score bias's slots, the token map's windows (attention_bidir.h)
    const float *bias;
    const int *perm;
} BlockAttention;

typedef struct {
    const float *drop_scales; // drop-path: branch j of sample b scaled by [b * stride + j]
    size_t drop_stride;
    int samples;
    int dropout; // residual dropout: each branch apart, masked (p > 0) from stream[j], then added
    float dropout_p;
    uint64_t dropout_seed, dropout_stream[2];
} BlockResidual;

typedef struct {
    int N, C, NH, hidden; // rows, channels, heads, MLP width
    NormKind norm;
    int centred;      // proj and fc2 are CBWC: the backward centres their output gradient
    MatmulEngine *mm; // NULL: fp32
    BlockAttention attention;
    BlockResidual residual;
} BlockConfig;

// A layer's parameter tensors (its weights, gradients or cbwc's centred copies).
typedef struct {
    float *ln1w, *ln1b, *qkvw, *qkvb, *projw, *projb, *ln2w, *ln2b, *fcw, *fcb, *fc2w, *fc2b;
} BlockTensors;
// What the block reads: proj, fc2 as they run (cbwc's V, P b forward, the proxies backward).
typedef struct {
    const float *ln1w, *ln1b, *qkvb, *projb, *ln2w, *ln2b, *fcb, *fc2b;
    LinearWeight qkvw, projw, fcw, fc2w;
} BlockWeights;
// fp32 weights: proj, fc2 and their biases from writers, the rest from p.
BlockWeights block_weights_fp32(const BlockTensors *p, const BlockTensors *writers);

// att: the lse (causal) or the probabilities (full); qkv is written from row t0 on.
typedef struct {
    float *ln1, *ln1_mean, *ln1_rstd, *qkv, *atty, *att, *resid2;
    float *ln2, *ln2_mean, *ln2_rstd, *fch, *fch_gelu, *out;
} BlockActs;

// Their sizes in that order for N rows and att_size floats of attention state;
// layer l's slices of a stack of blocks stored layer after layer (GPT-2's, ViT's).
#define BLOCK_NUM_ACTS 13
void block_acts_sizes(size_t sizes[BLOCK_NUM_ACTS], size_t N, size_t C, size_t H, size_t att_size);
BlockTensors block_tensors_layer(const BlockTensors *stack, int l, int C, int H);
BlockActs block_acts_layer(const BlockActs *stack, int l, int N, int C, int H, size_t att_size);

// branch, dln, datty (N, C), dqkv (N, 3C), dfch, dfch_gelu (N, hidden), dscore_sum (bias) or NULL.
typedef struct {
    float *branch, *dln, *datty, *dqkv, *dfch, *dfch_gelu, *dscore_sum;
} BlockScratch;

void block_forward(const BlockConfig *c, const BlockWeights *w, const BlockActs *a,
                   const float *x, const BlockScratch *s);
// d: the output's gradient in, the input's (x) out; the parameter gradients add into g.
void block_backward(const BlockConfig *c, const BlockWeights *w, const BlockTensors *g,
                    const BlockActs *a, const float *x, float *d, const BlockScratch *s);

#endif
