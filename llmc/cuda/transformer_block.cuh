// The pre-LN transformer blocks GPT-2 (gpt2_cuda.cuh) and ViT (vit_cuda.cuh)
// share, written once: their activations, forward and backward. Layer l of L,
// on the stream x (B T rows of width C; x of layer 0: acts.encoded):
//   ln1       = norm1(x)
//   qkv       = ln1 Wqkv + bqkv;  atty = attention(qkv)
//   residual2 = x + atty Wattproj + battproj;  ln2 = norm2(residual2)
//   fch       = ln2 Wfc + bfc (width H);  fch_gelu = GELU(fch)
//   residual3 = residual2 + fch_gelu Wfcproj + bfcproj  (x of layer l + 1)
// Each residual add is fused with the norm after it (ln2, the next ln1, or
// the final norm lnf after the last layer). cbwc: the two c_proj read V = P W
// and P b (the model's centred_*), and their output gradient is centred
// (P dy) before their backward (docs/math.md).
// M is GPT2Cuda or ViTCuda, which name alike what the blocks read: config
// (num_layers, channels, num_heads), mode, params_x, grads, acts, scratch,
// centred_attprojw/b, centred_fcprojw/b, attention, mm and num_sms. H is the
// MLP's hidden width: 4C in GPT-2, mlp_ratio C in ViT. A branch mask (GPT-2's
// residual dropout) may act on each c_proj output before its residual add,
// and on its gradient in the backward.
// Activation recompute (llm.c's -r; m->recompute, fixed at allocation):
//   0: every layer's activations are kept;
//   1: fch_gelu is one layer's buffer, recomputed from fch in the backward
//      (by the GELU kernel; where the forward's GELU is the GEMM's epilogue,
//      -fe 1, the recomputed values may differ from the forward's in the
//      last bit of a bf16: the epilogue rounds GELU(fp32 pre-activation),
//      the kernel GELU(bf16 fch), as llm.c's -r 1 with its GELU fusion);
//   2: also ln1 and ln2, recomputed from their stored inputs (the kept
//      residuals) by the forward's own kernel: the same bits, so the
//      gradients are bit-identical to -r 1's (and at -fe 0 to -r 0's). mean
//      and rstd stay per layer.
// Epilogue fusion (-fe, m->mm.fuse_epilogues, default 1; matmul_cublaslt.cuh):
//   forward:  fch_gelu = GELU(fch), fch = ln2 Wfc + bfc: one GEMM (GELU_AUX_BIAS);
//   backward: dfch = (dy Wfcproj) GELU'(fch) with dbfc: one GEMM (DGELU_BGRAD);
//             the dW GEMMs of qkv, attproj and fcproj give their dbias (BGRADB);
//   the four bias gradients (written, not accumulated, by cuBLASLt) then added
//   to the gradients by one launch a layer (scratch.dbias). -fe 0: separate
//   GELU kernels and column sums (reduce.cuh). A fused GEMM cuBLASLt has no
//   algorithm for falls back to the separate kernels.
#ifndef FOLDNORM_TRANSFORMER_BLOCK_CUH
#define FOLDNORM_TRANSFORMER_BLOCK_CUH

extern "C" {
#include "core/norm_mode.h"
}

#include "attention_layers.cuh"
#include "cbwc.cuh"
#include "cuda_params.cuh"
#include "gelu.cuh"
#include "matmul_cublaslt.cuh"
#include "norm.cuh"
#include "reduce.cuh"

// The default branch mask: none. A mask is called as mask(out, in, l, branch)
// (branch 0: attention's c_proj, 1: the MLP's) and returns whether it wrote
// out = mask(in) (B T C values; out may be in).
struct NoBranchMask {
    bool operator()(floatX *, const floatX *, int, int) const { return false; }
};

// -r's flag-table entry (train_gpt2cu, train_vitcu), dest an int *
#define RECOMPUTE_CLI_FLAG(dest)                                                                \
    {"-r", CLI_INT, dest, 0, 2,                                                                  \
     "activation recompute in the backward, as llm.c's: 0 = keep every layer's\n"              \
     "activations, 1 = recompute GELU, 2 = also the norms ln1 and ln2 (less\n"                 \
     "memory, the same gradients bit for bit) (default 0)", NULL, 0, 0}

// layers of stored ln1/ln2 and of fch_gelu at a recompute level
static inline size_t recompute_norm_layers(int recompute, size_t L) {
    return recompute >= 2 ? 1 : L;
}
static inline size_t recompute_gelu_layers(int recompute, size_t L) {
    return recompute >= 1 ? 1 : L;
}

// the blocks' activations for BT rows, stacked over L layers (a: the model's
// activations struct; ln1, ln2 and fch_gelu one layer only where recompute
// says so); in this order, which fixes the device addresses. Returns the
// bytes allocated (reported at start-up; test/suites/recompute.sh checks them).
template <typename Acts>
static inline size_t transformer_blocks_alloc_acts(Acts *a, size_t L, size_t BT, size_t C,
                                                   size_t H, int recompute = 0) {
    const size_t Ln = recompute_norm_layers(recompute, L), Lg = recompute_gelu_layers(recompute, L);
    size_t xs = 0, fs = 0; // floatX and float elements
    a->ln1 = cuda_alloc<floatX>(Ln * BT * C), xs += Ln * BT * C;
    a->ln1_mean = cuda_alloc<float>(L * BT), fs += L * BT;
    a->ln1_rstd = cuda_alloc<float>(L * BT), fs += L * BT;
    a->qkv = cuda_alloc<floatX>(L * BT * 3 * C), xs += L * BT * 3 * C;
    a->atty = cuda_alloc<floatX>(L * BT * C), xs += L * BT * C;
    a->residual2 = cuda_alloc<floatX>(L * BT * C), xs += L * BT * C;
    a->ln2 = cuda_alloc<floatX>(Ln * BT * C), xs += Ln * BT * C;
    a->ln2_mean = cuda_alloc<float>(L * BT), fs += L * BT;
    a->ln2_rstd = cuda_alloc<float>(L * BT), fs += L * BT;
    a->fch = cuda_alloc<floatX>(L * BT * H), xs += L * BT * H;
    a->fch_gelu = cuda_alloc<floatX>(Lg * BT * H), xs += Lg * BT * H;
    a->residual3 = cuda_alloc<floatX>(L * BT * C), xs += L * BT * C;
    return xs * sizeof(floatX) + fs * sizeof(float);
}

// the start-up line: the blocks' stored activations at this -r level
static inline void transformer_blocks_report_acts(const char *model, int recompute, size_t bytes,
                                                  int B, int T) {
    printf("%s: -r %d: the blocks' activations take %zu bytes (%.1f MiB) at B=%d T=%d\n", model,
           recompute, bytes, (double)bytes / (1024.0 * 1024.0), B, T);
}

// One layer's bias gradients as the BGRAD epilogues write them: fcprojb (C),
// fcb (H), attprojb (C), qkvb (3C), each at a 16-byte aligned offset.
static inline size_t dbias_round(size_t n) { return (n + 3) / 4 * 4; }
static inline size_t transformer_blocks_dbias_floats(size_t C, size_t H) {
    return 2 * dbias_round(C) + dbias_round(H) + dbias_round(3 * C);
}

// the backward's scratch for one layer of BT rows (s: the model's scratch struct)
template <typename Scratch>
static inline void transformer_blocks_alloc_scratch(Scratch *s, size_t BT, size_t C, size_t H) {
    s->dresidual = cuda_alloc<floatX>(BT * C);
    s->branch = cuda_alloc<floatX>(BT * C);
    s->dln = cuda_alloc<floatX>(BT * C);
    s->datty = cuda_alloc<floatX>(BT * C);
    s->dqkv = cuda_alloc<floatX>(BT * 3 * C);
    s->dfch = cuda_alloc<floatX>(BT * H);
    s->dfch_gelu = cuda_alloc<floatX>(BT * H);
    s->dbias = cuda_alloc<float>(transformer_blocks_dbias_floats(C, H));
}

// From acts.encoded (B, T, C) through the L blocks to acts.lnf, the final
// norm of the last residual3; scratch.branch carries each c_proj's output.
template <typename M, typename Mask = NoBranchMask>
static inline void transformer_blocks_forward(M *m, int B, int T, int H, Mask mask = Mask()) {
    const int L = m->config.num_layers, C = m->config.channels, NH = m->config.num_heads;
    const int BT = B * T;
    const bool layer = norm_mode_kernel(m->mode, true).centre;
    const int centred = norm_policy(m->mode)->cbwc;
    const cudaStream_t st = m->mm.stream;
    const MatmulContext *mm = &m->mm;
    const auto &p = m->params_x;
    const auto &a = m->acts;
    floatX *branch = m->scratch.branch;
    const floatX *attprojw = centred ? m->centred_attprojw : p.attprojw;
    const floatX *attprojb = centred ? m->centred_attprojb : p.attprojb;
    const floatX *fcprojw = centred ? m->centred_fcprojw : p.fcprojw;
    const floatX *fcprojb = centred ? m->centred_fcprojb : p.fcprojb;
    const size_t btc = (size_t)BT * C, lcc = (size_t)C * C, lch = (size_t)C * H;
    // the offsets of layer l in ln1/ln2 and in fch_gelu (0 where one layer is kept)
    const size_t ln_stride = m->recompute >= 2 ? 0 : btc;
    const size_t gelu_stride = m->recompute >= 1 ? 0 : (size_t)BT * H;

    residual_norm_forward(layer, NULL, a.ln1, a.ln1_mean, a.ln1_rstd, a.encoded, NULL, p.ln1w,
                          p.ln1b, BT, C, st);
    for (int l = 0; l < L; l++) {
        const size_t lc = (size_t)l * C, lbtc = (size_t)l * btc, lbt = (size_t)l * BT;
        const size_t lbth = (size_t)l * BT * H;
        const size_t lln = (size_t)l * ln_stride, lgelu = (size_t)l * gelu_stride;
        const floatX *residual = l == 0 ? a.encoded : a.residual3 + lbtc - btc;
        matmul_forward_cuda(mm, a.qkv + 3 * lbtc, a.ln1 + lln, p.qkvw + 3 * l * lcc,
                            p.qkvb + 3 * lc, BT, C, 3 * C);
        attention_layers_forward(&m->attention, mm, l, a.atty + lbtc, a.qkv + 3 * lbtc, B, T, C,
                                 NH);
        matmul_forward_cuda(mm, branch, a.atty + lbtc, attprojw + l * lcc, attprojb + lc, BT, C, C);
        mask(branch, branch, l, 0);
        residual_norm_forward(layer, a.residual2 + lbtc, a.ln2 + lln, a.ln2_mean + lbt,
                              a.ln2_rstd + lbt, residual, branch, p.ln2w + lc, p.ln2b + lc, BT, C,
                              st);
        if (!(mm->fuse_epilogues &&
              matmul_forward_gelu_cuda(mm, a.fch_gelu + lgelu, a.fch + lbth, a.ln2 + lln,
                                       p.fcw + l * lch, p.fcb + (size_t)l * H, BT, C, H))) {
            matmul_forward_cuda(mm, a.fch + lbth, a.ln2 + lln, p.fcw + l * lch,
                                p.fcb + (size_t)l * H, BT, C, H);
            gelu_forward_cuda(a.fch_gelu + lgelu, a.fch + lbth, (size_t)BT * H, st);
        }
        matmul_forward_cuda(mm, branch, a.fch_gelu + lgelu, fcprojw + l * lch, fcprojb + lc, BT, H,
                            C);
        mask(branch, branch, l, 1);
        // residual3 = residual2 + branch, fused with the next norm (ln1 of l+1, or lnf)
        if (l + 1 < L) {
            residual_norm_forward(layer, a.residual3 + lbtc, a.ln1 + lln + ln_stride,
                                  a.ln1_mean + lbt + BT, a.ln1_rstd + lbt + BT,
                                  a.residual2 + lbtc, branch, p.ln1w + lc + C, p.ln1b + lc + C,
                                  BT, C, st);
        } else {
            residual_norm_forward(layer, a.residual3 + lbtc, a.lnf, a.lnf_mean, a.lnf_rstd,
                                  a.residual2 + lbtc, branch, p.lnfw, p.lnfb, BT, C, st);
        }
    }
}

// The output gradient of a c_proj whose output is added to the stream:
// dstream, or in cbwc P dy (its rows centred, written to branch).
static inline const floatX *stream_writer_dy(const MatmulContext *mm, const floatX *dstream,
                                             floatX *branch, int centred, int N, int C) {
    if (!centred) return dstream;
    centre_rows_cuda(branch, dstream, N, C, mm->stream);
    return branch;
}

// dW (OC, IC) += dy^T x and db (OC) += the column sums of dy (N, OC): with
// -fe 1 one GEMM whose BGRADB epilogue writes the sums to db_scratch, which
// joins `pending` (added to db by float_segments_accumulate); else (or where
// cuBLASLt has no algorithm) the GEMM and column sums (reduce: their partials).
static inline void weight_bias_backward(const MatmulContext *mm, float *dw, float *db,
                                        float *db_scratch, FloatSegments *pending, float *reduce,
                                        const floatX *dy, const floatX *x, int N, int IC, int OC) {
    if (mm->fuse_epilogues &&
        matmul_backward_weight_bgrad_cuda(mm, dw, db_scratch, dy, x, N, IC, OC)) {
        float_segments_push(pending, db, db_scratch, OC);
        return;
    }
    column_sum_accumulate(db, reduce, dy, N, OC, mm->stream);
    matmul_backward_weight_cuda(mm, dw, dy, x, N, IC, OC);
}

// From scratch.dln = dloss/dlnf (B, T, C) back through the final norm and the
// L blocks to scratch.dresidual = dloss/dencoded, accumulating the parameter
// gradients. layer_done (may be NULL) is called when a group of gradients is
// final: with L after lnfw and lnfb, then with l after layer l's slices.
template <typename M, typename Mask = NoBranchMask>
static inline void transformer_blocks_backward(M *m, int B, int T, int H,
                                               void (*layer_done)(void *ctx, int layer),
                                               void *ctx, Mask mask = Mask()) {
    const int L = m->config.num_layers, C = m->config.channels, NH = m->config.num_heads;
    const int BT = B * T;
    const bool layer = norm_mode_kernel(m->mode, true).centre;
    const int centred = norm_policy(m->mode)->cbwc;
    const cudaStream_t st = m->mm.stream;
    const MatmulContext *mm = &m->mm;
    const size_t btc = (size_t)BT * C, lcc = (size_t)C * C, lch = (size_t)C * H;
    const auto &p = m->params_x;
    const auto &g = m->grads;
    const auto &a = m->acts;
    const auto &s = m->scratch;
    const size_t ln_stride = m->recompute >= 2 ? 0 : btc;
    const size_t gelu_stride = m->recompute >= 1 ? 0 : (size_t)BT * H;

    CUDA_CHECK(cudaMemsetAsync(s.dresidual, 0, btc * sizeof(floatX), st));
    const floatX *last = a.residual3 + (size_t)(L - 1) * btc;
    norm_backward(layer, s.dresidual, g.lnfw, g.lnfb, s.reduce, s.dln, last, p.lnfw, a.lnf_mean,
                  a.lnf_rstd, BT, C, m->num_sms, st);
    if (layer_done != NULL) layer_done(ctx, L);
    for (int l = L - 1; l >= 0; l--) {
        const size_t lc = (size_t)l * C, lbtc = (size_t)l * btc, lbt = (size_t)l * BT;
        const size_t lbth = (size_t)l * BT * H;
        const size_t lln = (size_t)l * ln_stride, lgelu = (size_t)l * gelu_stride;
        const floatX *residual = l == 0 ? a.encoded : a.residual3 + lbtc - btc;
        // -r 1, 2: this layer's GELU output again, from the kept fch
        if (m->recompute >= 1) gelu_forward_cuda(a.fch_gelu, a.fch + lbth, (size_t)BT * H, st);
        // -r 2: ln2 again, from the kept residual2 by the forward's kernel (no
        // residual add here, the same rows summed in the same order: the same
        // bits; it rewrites mean and rstd with the values they hold)
        if (m->recompute >= 2) {
            residual_norm_forward(layer, NULL, a.ln2, a.ln2_mean + lbt, a.ln2_rstd + lbt,
                                  a.residual2 + lbtc, NULL, p.ln2w + lc, p.ln2b + lc, BT, C, st);
        }
        // MLP branch: its gradient through the forward's mask (then centred in
        // place in cbwc: one warp per row, so that is safe)
        FloatSegments pending;
        pending.count = 0;
        const size_t C4 = dbias_round((size_t)C), H4 = dbias_round((size_t)H);
        float *db_fcproj = s.dbias, *db_fc = s.dbias + C4, *db_attproj = s.dbias + C4 + H4;
        float *db_qkv = s.dbias + 2 * C4 + H4;
        const floatX *dstream = mask(s.branch, s.dresidual, l, 1) ? s.branch : s.dresidual;
        const floatX *dy = stream_writer_dy(mm, dstream, s.branch, centred, BT, C);
        weight_bias_backward(mm, g.fcprojw + l * lch, g.fcprojb + lc, db_fcproj, &pending,
                             s.reduce, dy, a.fch_gelu + lgelu, BT, H, C);
        if (mm->fuse_epilogues && matmul_backward_dgelu_cuda(mm, s.dfch, db_fc, dy,
                                                             p.fcprojw + l * lch, a.fch + lbth,
                                                             BT, H, C)) {
            float_segments_push(&pending, g.fcb + (size_t)l * H, db_fc, H);
        } else {
            matmul_backward_input_cuda(mm, s.dfch_gelu, dy, p.fcprojw + l * lch, BT, H, C);
            gelu_backward_cuda(s.dfch, a.fch + lbth, s.dfch_gelu, (size_t)BT * H, st);
            column_sum_accumulate(g.fcb + (size_t)l * H, s.reduce, s.dfch, BT, H, st);
        }
        matmul_backward_cuda(mm, s.dln, g.fcw + l * lch, s.dfch, a.ln2 + lln, p.fcw + l * lch,
                             BT, C, H);
        norm_backward(layer, s.dresidual, g.ln2w + lc, g.ln2b + lc, s.reduce, s.dln,
                      a.residual2 + lbtc, p.ln2w + lc, a.ln2_mean + lbt, a.ln2_rstd + lbt, BT, C,
                      m->num_sms, st);
        // attention branch
        dstream = mask(s.branch, s.dresidual, l, 0) ? s.branch : s.dresidual;
        dy = stream_writer_dy(mm, dstream, s.branch, centred, BT, C);
        weight_bias_backward(mm, g.attprojw + l * lcc, g.attprojb + lc, db_attproj, &pending,
                             s.reduce, dy, a.atty + lbtc, BT, C, C);
        matmul_backward_input_cuda(mm, s.datty, dy, p.attprojw + l * lcc, BT, C, C);
        attention_layers_backward(&m->attention, mm, l, s.dqkv, s.datty, a.atty + lbtc,
                                  a.qkv + 3 * lbtc, B, T, C, NH);
        if (m->recompute >= 2) { // ln1 again, from the stream x of layer l
            residual_norm_forward(layer, NULL, a.ln1, a.ln1_mean + lbt, a.ln1_rstd + lbt, residual,
                                  NULL, p.ln1w + lc, p.ln1b + lc, BT, C, st);
        }
        weight_bias_backward(mm, g.qkvw + 3 * l * lcc, g.qkvb + 3 * lc, db_qkv, &pending, s.reduce,
                             s.dqkv, a.ln1 + lln, BT, C, 3 * C);
        matmul_backward_input_cuda(mm, s.dln, s.dqkv, p.qkvw + 3 * l * lcc, BT, C, 3 * C);
        norm_backward(layer, s.dresidual, g.ln1w + lc, g.ln1b + lc, s.reduce, s.dln, residual,
                      p.ln1w + lc, a.ln1_mean + lbt, a.ln1_rstd + lbt, BT, C, m->num_sms, st);
        float_segments_accumulate(&pending, st); // the epilogues' bias gradients, one launch
        if (layer_done != NULL) layer_done(ctx, l);
    }
}

#endif
