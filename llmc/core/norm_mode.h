// The norm policy: what each norm mode means, in this one file (docs/math.md
// sections 1-4). GPT-2, ViT and Swin store the mode in their model files'
// headers; the models, the fold, the CUDA side and the trainers ask the
// policy below and never compare a mode with a MODE_* constant themselves
// (test/layout_rules.py checks it).
//   ln     every norm is LayerNorm
//   rms    every norm is RMSNorm (gain and bias), nothing centred
//   cbwc   RMSNorm where the norm's input is made zero-mean by centring the
//          layers that write it (CBWC); the same function as ln
//   folded (inference only: GPT-2, ViT, Swin) an ln or cbwc model turned by
//          bin/fold into one that stores the centred weights; not a -N word
//   prms   every norm is partial RMSNorm (Zhang and Sennrich 2019): the RMS
//          of the first ceil(p C) features scales all C (p: -nf, default
//          6.25 %, stored in the model file); nothing centred; CPU only
#ifndef FOLDNORM_NORM_MODE_H
#define FOLDNORM_NORM_MODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"

typedef enum { MODE_LN = 0, MODE_RMS = 1, MODE_CBWC = 2, MODE_FOLDED = 3, MODE_PRMS = 4 } NormMode;

// -N's words: the trainable modes (CLI_ENUM stores the index; norm_mode_from_flag).
#define NORM_MODE_FLAG_WORDS "ln|rms|cbwc|prms"
// -N and the modes' own flags, as entries of a program's flag table
// (core/cli.h); mode_index: -N's word index (norm_mode_from_flag), help: -N's text.
#define NORM_MODE_CLI_FLAGS(mode_index, help)                                                   \
    {"-N", CLI_ENUM, (mode_index), 0, 0, (help), NORM_MODE_FLAG_WORDS, 0, 0},                  \
    {"-nf", CLI_FLOAT, norm_mode_prms_share_flag(), 0, 1,                                      \
     "-N prms: share p of the features partial RMSNorm's RMS is taken over,\n"                 \
     "the first ceil(p C) (default 0.0625; a prms model file keeps its own)", "p", CLI_OPEN_LO, 0}
// -nf's default: Zhang and Sennrich 2019's 6.25 %
#define NORM_PRMS_SHARE_DEFAULT 0.0625f

// The parameters of the norm kernel (llmc/kernels/norm.h) one norm runs:
// centre subtracts the row mean first (LayerNorm), else the kernel scales by
// the root mean square alone (RMSNorm), taken over all C features, or with
// partial_share in (0, 1) over the first ceil(partial_share C) of them
// (partial RMSNorm, Zhang and Sennrich 2019).
typedef struct {
    bool centre;
    float partial_share; // 0: every feature
} NormKind;

// What a mode means.
typedef struct {
    const char *name;   // -N's word, model files' and logs' name
    int32_t file_value; // header slot value in GPT-2 and vision model files
    bool trainable;     // -N accepts it and a model in it trains
    // centre_all: every norm is LayerNorm; centre_uncentred: LayerNorm only
    // where the mode's centred layers do not make the norm's input zero-mean
    // (Swin's norms after a PatchMerging, unless -K 1); neither: every norm RMS
    bool centre_all, centre_uncentred;
    // the layers that write a foldable norm's input (the residual stream's
    // writers: GPT-2's wte as embedding, wpe, attn and mlp c_proj; ViT's patch
    // embedding, positions, attn and mlp projections; Swin's where its norms
    // fold) use CBWC: V = W - mean over outputs, refreshed every step
    bool cbwc;
    // the model file holds the centred weights (bin/fold's output)
    bool folded;
    // every norm takes its RMS over the first share of the features (-nf)
    bool partial;
    // why bin/fold (and an export as the LayerNorm model) does not take a
    // model in this mode; NULL: it is the ln model of its weights and folds
    const char *fold_refusal;
    // why the CUDA programs do not run it; NULL: they do
    const char *gpu_refusal;
    // why bin/onnx_export does not write it; NULL: it does
    const char *onnx_refusal;
} NormPolicy;

// What a model's layer does, as far as the policy cares: a model's tensor
// table gives each tensor one (gpt2.h's GPT2TensorInfo, vision's TensorTable).
typedef enum {
    LAYER_ROLE_NORM,          // a norm's gain or bias
    LAYER_ROLE_STREAM_WRITER, // writes a norm's input (the residual stream's writers above)
    LAYER_ROLE_INNER,         // any other layer (qkv, the MLP's first layer, ...)
} LayerRole;

const NormPolicy *norm_policy(NormMode mode);
// Whether a model in this mode holds a layer of this role centred (V = W -
// mean over outputs): cbwc trains the stream writers so, a folded file stores them so.
bool norm_policy_centres(const NormPolicy *policy, LayerRole role);
// The mode's name ("ln", "prms", ...), or "?" for a value that is no mode.
const char *norm_mode_name(NormMode mode);
// Returns 0 and sets *mode for a -N word (NORM_MODE_FLAG_WORDS); -1 otherwise.
int norm_mode_parse(const char *name, NormMode *mode);
// The mode of -N's CLI_ENUM index; ln (a fresh model's default) for -1.
NormMode norm_mode_from_flag(int index);
// The kernel parameters of a norm in this mode; foldable: the norm's input is
// written only by layers the mode can centre (every norm of GPT-2 and ViT).
NormKind norm_mode_kernel(NormMode mode, bool foldable);
// prms's share p in (0, 1]: -nf's value (the flag writes it), or a loaded
// prms model file's; one per process, used rounded to a multiple of 2^-16 as
// model files store it.
float *norm_mode_prms_share_flag(void);
// Model files: 0 and *mode for a stored value (prms: the low byte 4, the
// share in units of 2^-16 above it); -1 and a message listing the
// known values ("unknown norm mode 7 in header slot 8 (0=ln, ...)") otherwise.
int norm_mode_from_file(int32_t value, int slot, NormMode *mode, char *err, size_t err_bytes);
int32_t norm_mode_file_value(NormMode mode);
// Dies naming the program ("gpt2cuda") and the reason where the CUDA side does
// not run the mode (gpu_refusal).
void norm_mode_require_gpu(NormMode mode, const char *program);

#endif
