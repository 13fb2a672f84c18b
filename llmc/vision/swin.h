// Swin Transformer (Liu et al. 2021) in fp32 with the three norm modes:
// patch embedding (matmul over patches) + norm, stages of Swin blocks with
// window attention (W-MSA) and shifted-window attention (SW-MSA: cyclic
// shift by W/2 and the -100 mask of the official code), a learned relative
// position bias table per block, patch merging between stages (2x2 concat in
// the official order -> norm -> Linear 4C -> 2C, no bias), final norm,
// average pooling over tokens, linear head.
//
// Norm modes: ln = LayerNorm everywhere, rms = RMSNorm everywhere, cbwc =
// the foldable norms become RMSNorm and the layers writing their input are
// centred (CBWC); the others stay LayerNorm. cbwc is the same function as ln.
// folded (inference only, bin/fold) = cbwc's norms over weights the file
// stores centred (vision_fold.h).
// A norm is foldable when its input is zero-mean once a set S of layers is
// centred AND centring S leaves the ln model's function unchanged, i.e. every
// reader of a stream S writes into is blind to a per-token shift (a norm, a
// centring op). PatchMerging is not: its 2x2 concat puts four tokens'
// different offsets side by side, so centring a stage that feeds a merge
// changes the next merging norm's input (docs/math.md section 3, the shift
// condition; dev/reference/swin.py confirms it). Hence:
//   - the patch norm: foldable (S = the patch linear);
//   - without the centring ops: the last stage's block norms and the final
//     norm (S = its reduction, attn projs, fc2s); every other norm stays LN;
//   - centre_ops = 1 inserts explicit centring ops (x - mean(x) per token)
//     after the patch norm and before every PatchMerging, in every mode:
//     then every norm is foldable, merging norms included.
// The paper variant (config.paper_variant, cbwc only) is the paper's Swin:
// every norm RMS and every stream-writing layer (patch linear, reductions,
// attn projs, fc2s) centred, without centring ops. It is NOT the ln model
// (the merges see the offsets centring removed); it is here to set the
// paper's Swin claim beside the exact fold (vision_config.h).
#ifndef FOLDNORM_SWIN_H
#define FOLDNORM_SWIN_H

#include <stddef.h>

#include "kernels/adamw.h"
#include "kernels/classifier_loss.h"
#include "kernels/transformer_block.h"
#include "core/norm_mode.h"
#include "core/tensor_table.h"
#include "vision_layout.h" // SwinConfig, SwinOffsets

// One Swin block's shapes, parameter offsets and activations.
typedef struct {
    int stage, C, NH, res, window, shift, N, T, nW, hidden;
    const SwinBlockOffsets *off; // its parameters (vision_layout.h)
    int rms_in_cbwc;    // RMS norms, centred proj and fc2 in cbwc (foldable, or the paper variant)
    int *perm;          // (N) window-order token -> image token (shift included)
    int *rel_index;     // (T*T) into the ((2W-1)^2, NH) table
    float *mask;        // (nW, T, T) shifted-window mask, or NULL
    float *bias;        // (nbias, NH, T, T) rpb (+ mask), refreshed every forward
    int nbias;
    BlockActs acts; // (kernels/transformer_block.h) atty in image order
} SwinBlock;

// Patch merging into stage s >= 1.
typedef struct {
    int C_in, res_out, N_out;
    const SwinMergeOffsets *off;
    int rms_in_cbwc;       // the merging norm is RMS in cbwc (foldable, or the paper variant)
    int centred_reduction; // the reduction is CBWC in cbwc (foldable stream, or the paper variant)
    float *merged, *normed, *mean, *rstd, *out; // (B, N_out, 4C_in) x2, (B, N_out) x2, (B, N_out, 2C_in)
} SwinMerge;

typedef struct {
    SwinConfig config;
    NormMode mode;
    size_t num_parameters;
    float *params_memory, *grads_memory, *m_memory, *v_memory, *centred_memory;
    int adamw_step, centred_stale;
    TensorTable table; // the parameter tensors in file order (vision_layout.c)
    SwinOffsets off;   // where each tensor of the patch embedding, blocks, merges and head is
    int num_blocks;
    SwinBlock *blocks;
    SwinMerge merges[SWIN_MAX_STAGES]; // [0] unused
    int res0, C_last, N_last, PD;
    // activations for batch_size
    int batch_size;
    float *acts_memory, *scratch_memory;
    float *patches, *patch_out, *pn, *pn_mean, *pn_rstd, *stream0; // stage-1 stream start
    float *lnf, *lnf_mean, *lnf_rstd, *pooled, *logits, *dlogits, *losses;
    float *s_a, *s_b, *s_dln, *s_datty, *s_branch, *s_dqkv, *s_dfch, *s_dfchg, *s_pooled;
    float *s_dscore_sum; // (NH, T, T) of the largest block: score gradients summed over windows
    int *labels;
    float smoothing, mean_loss;
    // drop-path (kernels/drop_path.h): (B, num_blocks, 2) branch scales of the
    // next forward and its backward, the caller's; NULL: none (inference)
    const float *drop_scales;
    MixTargets mix; // of the next forward's loss and its backward (vit.h's), the caller's
} Swin;

// Allocates the parameters (uninitialised) and zero gradients of a checked
// config, with the blocks' window tables; a loader copies a file's parameters in.
void swin_build(Swin *model, const SwinConfig *config, NormMode mode);
void swin_init_random(Swin *model, const SwinConfig *config, NormMode mode, unsigned long long seed);
void swin_forward(Swin *model, const float *images, const int *labels, float smoothing, int B);
void swin_zero_grad(Swin *model);
// The drop-path scales (B, num_blocks, 2) the following forwards and backwards
// apply (the caller keeps them alive), or NULL: every branch kept.
void swin_set_drop_path(Swin *model, const float *scales);
// The mixed targets of the following forwards' losses and backwards (vit_set_mix_targets).
void swin_set_mix_targets(Swin *model, MixTargets mix);
void swin_backward(Swin *model, float loss_scale);
double swin_grad_norm(const Swin *model);
void swin_update(Swin *model, const AdamWConfig *cfg, float grad_clip);
// The AdamW step on the parameters [lo, hi) only (a ZeRO-1 shard, adamw.h),
// gradients scaled by grad_scale (the caller's global-norm clip).
void swin_update_shard(Swin *model, const AdamWConfig *cfg, float grad_scale, size_t lo,
                       size_t hi);
void swin_free(Swin *model);

#endif
