// ViT (pre-LN encoder, cls token, learned positions, GELU-tanh MLP,
// bidirectional attention, final norm, linear head on the cls token) in fp32
// with the three norm modes of norm_mode.h over the shared kernels:
//   ln   every norm is LayerNorm
//   rms  every norm is RMSNorm (gain and bias), nothing centred
//   cbwc every norm is RMSNorm and everything that writes the residual
//        stream is centred (docs/math.md section 3): the patch-embedding
//        linear (CBWC), the cls token and every position-embedding row
//        (centred over C), and every attn proj and mlp fc2 (CBWC).
//        The head reads the final norm's output and is not centred.
//   folded (inference only: bin/fold) every norm is RMSNorm and the file
//        holds the centred stream writers (vision_fold.h).
#ifndef FOLDNORM_VIT_H
#define FOLDNORM_VIT_H

#include <stddef.h>

#include "kernels/adamw.h"
#include "kernels/classifier_loss.h"
#include "kernels/transformer_block.h"
#include "core/norm_mode.h"
#include "vision_layout.h" // ViTConfig, VIT_NUM_PARAM_TENSORS

typedef struct {
    float *patchw, *patchb, *cls, *pos;
    float *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb;
    float *ln2w, *ln2b, *fcw, *fcb, *fcprojw, *fcprojb;
    float *lnfw, *lnfb, *headw, *headb;
} ViTParams;

#define VIT_NUM_ACT_TENSORS 22
typedef struct {
    float *patches;                   // (B*Np, PD)
    float *patch_out;                 // (B*Np, C)
    float *encoded;                   // (B, T, C)
    BlockActs layers; // (L, B, T, ...): att (L, B, NH, T, T), out = residual3 (transformer_block.h)
    float *cls_rows;                  // (B, C) the cls rows of the last stream
    float *lnf, *lnf_mean, *lnf_rstd; // (B, C), (B) x2
    float *logits;                    // (B, K)
    float *dlogits;                   // (B, K)
    float *losses;                    // (B)
} ViTActivations;

#define VIT_NUM_SCRATCH_TENSORS 10
typedef struct {
    float *dresidual;   // (B, T, C)
    BlockScratch block; // the block's (transformer_block.h), dscore_sum NULL
    float *dcls_rows;   // (B, C)
    float *dpatch;    // (B*Np, C)
} ViTScratch;

typedef struct {
    ViTConfig config;
    NormMode mode;
    ViTParams params;
    size_t param_sizes[VIT_NUM_PARAM_TENSORS];
    float *params_memory;
    size_t num_parameters;
    ViTParams grads;
    float *grads_memory;
    float *m_memory;
    float *v_memory;
    int adamw_step;
    int batch_size; // of the activations
    ViTActivations acts;
    float *acts_memory;
    ViTScratch scratch;
    float *scratch_memory;
    // cbwc: effective (centred) copies of the stream writers, refreshed after each update
    ViTParams centred; // only patchw, patchb, cls, pos, attprojw, attprojb, fcprojw, fcprojb
    float *centred_memory;
    int centred_stale;
    int *labels;     // (B) of the last forward with labels
    float smoothing; // label smoothing of the last forward
    float mean_loss; // -1 when the last forward had no labels
    // drop-path (kernels/drop_path.h): (B, L, 2) branch scales of the next
    // forward and its backward, the caller's; NULL: none (inference)
    const float *drop_scales;
    // mixed targets (mixup / cutmix) of the next forward's loss and its
    // backward, the caller's; {NULL, NULL}: the labels alone
    MixTargets mix;
} ViT;

// Allocates the parameters (uninitialised) and zero gradients of a checked
// config; a loader copies a file's parameters in (classifier_load).
void vit_build(ViT *model, const ViTConfig *config, NormMode mode);
// N(0, 0.02) matrices, cls and pos; zero biases; unit gains.
void vit_init_random(ViT *model, const ViTConfig *config, NormMode mode, unsigned long long seed);

// images (B, Cin, S, S); labels (B) may be NULL (no loss).
void vit_forward(ViT *model, const float *images, const int *labels, float smoothing, int B);
void vit_zero_grad(ViT *model);
// The drop-path scales (B, L, 2) the following forwards and backwards apply
// (the caller keeps them alive), or NULL: every branch kept.
void vit_set_drop_path(ViT *model, const float *scales);
// The mixed targets (B of each, the caller keeps them alive) of the following
// forwards' losses and backwards; {NULL, NULL}: the labels alone.
void vit_set_mix_targets(ViT *model, MixTargets mix);
// Accumulates the gradients of loss_scale * sum of per-image losses.
void vit_backward(ViT *model, float loss_scale);
double vit_grad_norm(const ViT *model);
void vit_update(ViT *model, const AdamWConfig *cfg, float grad_clip);
// The AdamW step on the parameters [lo, hi) only (a ZeRO-1 shard, adamw.h),
// gradients scaled by grad_scale (the caller's global-norm clip).
void vit_update_shard(ViT *model, const AdamWConfig *cfg, float grad_scale, size_t lo, size_t hi);
void vit_free(ViT *model);

#endif
