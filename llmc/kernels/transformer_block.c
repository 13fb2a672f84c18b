#include "transformer_block.h"

#include <string.h>

#include "attention.h"
#include "attention_bidir.h"
#include "cbwc.h"
#include "drop_path.h"
#include "dropout.h"
#include "gelu.h"

LinearWeight linear_weight_at(LinearWeight w, size_t offset) {
    return (LinearWeight){w.fp32 + offset, w.bf16 == NULL ? NULL : w.bf16 + offset};
}

BlockWeights block_weights_fp32(const BlockTensors *p, const BlockTensors *writers) {
    return (BlockWeights){p->ln1w, p->ln1b, p->qkvb, writers->projb, p->ln2w, p->ln2b, p->fcb,
                          writers->fc2b, {p->qkvw, NULL}, {writers->projw, NULL}, {p->fcw, NULL},
                          {writers->fc2w, NULL}};
}

BlockTensors block_tensors_layer(const BlockTensors *s, int l, int C, int H) {
    const size_t lc = (size_t)l * C, lh = (size_t)l * H;
    return (BlockTensors){s->ln1w + lc, s->ln1b + lc, s->qkvw + 3 * lc * C, s->qkvb + 3 * lc,
                          s->projw + lc * C, s->projb + lc, s->ln2w + lc, s->ln2b + lc,
                          s->fcw + lh * C, s->fcb + lh, s->fc2w + lh * C, s->fc2b + lc};
}

void block_acts_sizes(size_t sizes[BLOCK_NUM_ACTS], size_t N, size_t C, size_t H, size_t att_size) {
    const size_t s[BLOCK_NUM_ACTS] = {N * C, N, N, 3 * N * C, N * C, att_size, N * C,
                                      N * C, N, N, N * H,     N * H, N * C};
    memcpy(sizes, s, sizeof(s));
}

BlockActs block_acts_layer(const BlockActs *s, int l, int N, int C, int H, size_t att_size) {
    const size_t ln = (size_t)l * N, lnc = ln * C, lnh = ln * H;
    return (BlockActs){s->ln1 + lnc, s->ln1_mean + ln, s->ln1_rstd + ln, s->qkv + 3 * lnc,
                       s->atty + lnc, s->att + l * att_size, s->resid2 + lnc, s->ln2 + lnc,
                       s->ln2_mean + ln, s->ln2_rstd + ln, s->fch + lnh, s->fch_gelu + lnh,
                       s->out + lnc};
}

void linear_forward(MatmulEngine *mm, float *out, const float *residual, const float *inp,
                    LinearWeight W, const float *bias, int N, int IC, int OC) {
    if (mm != NULL && matmul_engine_precision(mm) == MATMUL_BF16) {
        matmul_bf16_forward(mm, out, residual, inp, W.bf16, bias, N, IC, OC);
    } else if (mm != NULL) {
        matmul_dnnl_fp32_forward(mm, out, residual, inp, W.fp32, bias, N, IC, OC);
    } else if (residual == NULL) {
        matmul_forward(out, inp, W.fp32, bias, N, IC, OC);
    } else {
        matmul_forward_residual(out, residual, inp, W.fp32, bias, N, IC, OC);
    }
}

void linear_backward(MatmulEngine *mm, float *dinp, float *dW, float *dbias, const float *dout,
                     const float *inp, LinearWeight W, int N, int IC, int OC) {
    if (mm == NULL) {
        matmul_backward_set_dinp(dinp, dW, dbias, dout, inp, W.fp32, N, IC, OC);
    } else if (matmul_engine_precision(mm) == MATMUL_BF16) {
        matmul_bf16_backward(mm, dinp, 0, dW, dbias, dout, inp, W.bf16, N, IC, OC);
    } else {
        matmul_dnnl_fp32_backward(mm, dinp, 0, dW, dbias, dout, inp, W.fp32, N, IC, OC);
    }
}

void stream_writer_backward(MatmulEngine *mm, int centre, float *scratch, float *dinp, float *dW,
                            float *dbias, const float *dout, const float *inp, LinearWeight W,
                            int N, int IC, int OC) {
    if (centre) {
        cbwc_centre_rows(scratch, dout, N, OC);
        dout = scratch;
    }
    linear_backward(mm, dinp, dW, dbias, dout, inp, W, N, IC, OC);
}

// out = residual + branch j of (inp W^T + bias), and its backward for the
// stream gradient d (through the dropout mask or drop-path scale; writes dinp).
static void branch_forward(const BlockConfig *c, int j, float *out, const float *residual,
                           const float *inp, LinearWeight W, const float *bias, int IC,
                           float *branch) {
    const BlockResidual *r = &c->residual;
    const size_t n = (size_t)c->N * c->C;
    if (r->dropout) {
        linear_forward(c->mm, branch, NULL, inp, W, bias, c->N, IC, c->C);
        if (r->dropout_p > 0.0f) {
            dropout_apply(branch, branch, n, r->dropout_p, r->dropout_seed, r->dropout_stream[j]);
        }
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) {
            out[i] = residual[i] + branch[i];
        }
    } else {
        linear_forward(c->mm, out, r->drop_scales == NULL ? residual : NULL, inp, W, bias, c->N, IC,
                       c->C);
        if (r->drop_scales != NULL) {
            drop_path_residual_add(out, residual, out, r->drop_scales + j, r->drop_stride,
                                   r->samples, n / (size_t)r->samples);
        }
    }
}

static void branch_backward(const BlockConfig *c, int j, float *dinp, float *dW, float *dbias,
                            const float *d, const float *inp, LinearWeight W, int IC,
                            float *branch) {
    const BlockResidual *r = &c->residual;
    const size_t n = (size_t)c->N * c->C;
    if (r->dropout && r->dropout_p > 0.0f) {
        dropout_apply(branch, d, n, r->dropout_p, r->dropout_seed, r->dropout_stream[j]);
        d = branch;
    } else if (!r->dropout && r->drop_scales != NULL) {
        drop_path_scale(branch, d, r->drop_scales + j, r->drop_stride, r->samples,
                        n / (size_t)r->samples);
        d = branch;
    }
    stream_writer_backward(c->mm, c->centred, branch, dinp, dW, dbias, d, inp, W, c->N, IC, c->C);
}

void block_forward(const BlockConfig *c, const BlockWeights *w, const BlockActs *a,
                   const float *x, const BlockScratch *s) {
    const int N = c->N, C = c->C, NH = c->NH, H = c->hidden;
    const BlockAttention *at = &c->attention;
    norm_forward(c->norm, a->ln1, a->ln1_mean, a->ln1_rstd, x, w->ln1w, w->ln1b, N, C);
    linear_forward(c->mm, a->qkv + (size_t)at->t0 * 3 * C, NULL, a->ln1, w->qkvw, w->qkvb, N, C,
                   3 * C);
    if (!at->causal) {
        attention_bidir_forward(a->atty, a->att, a->qkv, at->bias, at->nbias, at->perm, at->nW,
                                at->groups, at->T, C, NH);
    } else if (at->t0 == 0) {
        attention_forward(a->atty, a->att, a->qkv, at->groups, at->T, C, NH);
    } else { // the new rows against the cached ones
        attention_forward_rows(a->atty, a->qkv, at->t0, N, C, NH);
    }
    branch_forward(c, 0, a->resid2, x, a->atty, w->projw, w->projb, C, s->branch);
    norm_forward(c->norm, a->ln2, a->ln2_mean, a->ln2_rstd, a->resid2, w->ln2w, w->ln2b, N, C);
    linear_forward(c->mm, a->fch, NULL, a->ln2, w->fcw, w->fcb, N, C, H);
    gelu_forward(a->fch_gelu, a->fch, (size_t)N * H);
    branch_forward(c, 1, a->out, a->resid2, a->fch_gelu, w->fc2w, w->fc2b, H, s->branch);
}

void block_backward(const BlockConfig *c, const BlockWeights *w, const BlockTensors *g,
                    const BlockActs *a, const float *x, float *d, const BlockScratch *s) {
    const int N = c->N, C = c->C, NH = c->NH, H = c->hidden;
    const BlockAttention *at = &c->attention;
    branch_backward(c, 1, s->dfch_gelu, g->fc2w, g->fc2b, d, a->fch_gelu, w->fc2w, H, s->branch);
    gelu_backward(s->dfch, a->fch, s->dfch_gelu, (size_t)N * H);
    linear_backward(c->mm, s->dln, g->fcw, g->fcb, s->dfch, a->ln2, w->fcw, N, C, H);
    norm_backward(c->norm, d, g->ln2w, g->ln2b, s->dln, a->resid2, w->ln2w, a->ln2_mean,
                  a->ln2_rstd, N, C);
    branch_backward(c, 0, s->datty, g->projw, g->projb, d, a->atty, w->projw, C, s->branch);
    if (at->causal) {
        memset(s->dqkv, 0, (size_t)N * 3 * C * sizeof(float)); // attention_backward accumulates
        attention_backward(s->dqkv, s->datty, a->qkv, a->atty, a->att, at->groups, at->T, C, NH);
    } else {
        attention_bidir_backward(s->dqkv, s->dscore_sum, s->datty, a->qkv, a->att, at->perm,
                                 at->nW, at->groups, at->T, C, NH);
    }
    linear_backward(c->mm, s->dln, g->qkvw, g->qkvb, s->dqkv, a->ln1, w->qkvw, N, C, 3 * C);
    norm_backward(c->norm, d, g->ln1w, g->ln1b, s->dln, x, w->ln1w, a->ln1_mean, a->ln1_rstd, N,
                  C);
}
