// GPT-2 (pre-LN, learned positions, tied embedding/LM head, GELU-tanh MLP,
// causal attention) in fp32 with three norm modes over shared kernels:
//   ln   every norm is LayerNorm
//   rms  every norm is RMSNorm (gain and bias), nothing centred
//   cbwc every norm is RMSNorm and the layers feeding the residual stream
//        (wte as embedding, wpe, attn c_proj, mlp c_proj) use CBWC; the LM
//        head reads the proxy wte (docs/math.md sections 2-4).
#ifndef FOLDNORM_GPT2_H
#define FOLDNORM_GPT2_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/adamw.h"
#include "kernels/matmul.h"
#include "kernels/transformer_block.h"
#include "core/norm_mode.h"
#include "core/reader.h"

#define GPT2_MODEL_MAGIC 20240326
#define GPT2_MODEL_VERSION_FP32 3
#define GPT2_HEADER_SLOT_NORM_MODE 8

// MODE_FOLDED (norm_mode.h) files are written by bin/fold from an ln model:
// every norm RMSNorm, wte/wpe rows and attn/mlp c_proj already centred (V, P b),
// and the tied head reads V plus m_t = mean(W_t) stored after the parameters
// (docs/math.md sections 4-5).
// folded files: slot 9 = number of LNs turned into RMSNorm, slot 10 = which
// tensors hold centred weights (GPT2_FOLDED_* bits)
#define GPT2_HEADER_SLOT_FOLDED_NORMS 9
#define GPT2_HEADER_SLOT_FOLDED_LAYERS 10
#define GPT2_FOLDED_WTE 1
#define GPT2_FOLDED_WPE 2
#define GPT2_FOLDED_ATTPROJ 4
#define GPT2_FOLDED_FCPROJ 8
#define GPT2_FOLDED_ALL 15

typedef struct {
    int max_seq_len;       // maxT
    int vocab_size;        // V
    int padded_vocab_size; // Vp >= V, rows of wte
    int num_layers;        // L
    int num_heads;         // NH
    int channels;          // C
} GPT2Config;

// The parameter tensors' roles, in llm.c's file order: the index of each in
// ParameterTensors, param_sizes and the model file.
typedef enum {
    GPT2_WTE, GPT2_WPE, GPT2_LN1W, GPT2_LN1B, GPT2_QKVW, GPT2_QKVB, GPT2_ATTPROJW, GPT2_ATTPROJB,
    GPT2_LN2W, GPT2_LN2B, GPT2_FCW, GPT2_FCB, GPT2_FCPROJW, GPT2_FCPROJB, GPT2_LNFW, GPT2_LNFB,
    GPT2_NUM_PARAM_TENSORS
} GPT2Tensor;

// What a parameter tensor is, for the code that treats tensors by kind (the
// gradient reduction, ZeRO-1, the fold, the GPU's cbwc refresh).
typedef struct {
    const char *name;  // "wte", ... (file order)
    LayerRole role;    // what the norm policy asks about (norm_mode.h)
    int per_layer;     // stacked over the L layers (ln1w .. fcprojb)
    int bias_of;       // a weight's bias tensor that centres with it, or -1
    int is_bias;       // the bias of another tensor's layer
    int folded_bit;    // its GPT2_FOLDED_* bit in a folded file's slot 10, or 0
    int decayed;       // AdamW decays it (the matrices: wte, wpe, qkvw, attprojw, fcw, fcprojw)
} GPT2TensorInfo;

// The row of tensor i (0 <= i < GPT2_NUM_PARAM_TENSORS).
const GPT2TensorInfo *gpt2_tensor_info(int i);
// Which tensors' gradients become final together during gpt2_backward (the
// layer argument of GPT2GradsReady): L: lnfw, lnfb; 0 <= layer < L: each
// per-layer tensor's slice; -1: wte, wpe. Writes them to tensors in file
// order and returns their count.
int gpt2_grads_ready_group(int layer, int num_layers, int tensors[GPT2_NUM_PARAM_TENSORS]);

typedef struct {
    float *wte, *wpe, *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb;
    float *ln2w, *ln2b, *fcw, *fcb, *fcprojw, *fcprojb, *lnfw, *lnfb;
} ParameterTensors;

// Forward activations kept for the backward pass.
#define GPT2_NUM_ACT_TENSORS 20
typedef struct {
    float *encoded;                    // (B, T, C)
    BlockActs layers; // (L, B, T, ...): att the lse (L, B, NH, T), out = residual3 (transformer_block.h)
    float *lnf, *lnf_mean, *lnf_rstd;  // (B, T, C), (B, T) x2
    float *logits;                     // (B, T, Vp); dlogits in place after backward
    float *losses;                     // (B, T)
    float *logits_stats;               // (B, T, 2) each row's max, 1 / sum exp(x - max)
} ActivationTensors;

// Backward scratch, one layer's worth, reused layer after layer.
#define GPT2_NUM_SCRATCH_TENSORS 8
typedef struct {
    float *dresidual;   // (B, T, C) gradient of the residual stream
    BlockScratch block; // the block's (transformer_block.h), dscore_sum NULL
} BackwardScratch;

// Called by gpt2_backward when a group of gradients is final (as the GPU
// path's GPT2Cuda.grads_ready): layer = L after the final norm's (lnfw,
// lnfb), l after layer l's slice of each per-layer tensor, -1 at the end for
// wte and wpe (the embedding's gradient comes last).
typedef void (*GPT2GradsReady)(void *ctx, int layer);

typedef struct {
    GPT2Config config;
    NormMode mode;
    ParameterTensors params;
    size_t param_sizes[GPT2_NUM_PARAM_TENSORS];
    float *params_memory;
    size_t num_parameters;
    ParameterTensors grads;
    float *grads_memory;
    float *m_memory; // AdamW moments, allocated on the first update
    float *v_memory;
    int adamw_step;
    // activations for the (B, T) of the last forward
    int batch_size;
    int seq_len;
    ActivationTensors acts;
    float *acts_memory;
    BackwardScratch scratch;
    float *scratch_memory;
    // cbwc: the effective V and centred biases of attn c_proj and mlp c_proj,
    // projected from the proxy weights once per step (after each update)
    float *centred_memory;
    float *centred_attprojw, *centred_attprojb, *centred_fcprojw, *centred_fcprojb;
    int centred_stale;
    // folded: m_t = mean over C of the original wte row t (Vp), and what was folded
    float *head_row_means;
    int folded_norms, folded_layers;
    // residual dropout (Hugging Face GPT-2's resid_pdrop; 0: off): set by
    // gpt2_set_resid_dropout, applied only by gpt2_forward_train
    float resid_dropout;
    uint64_t dropout_seed;
    int dropout_active;     // the last forward applied dropout, with draw dropout_draw
    uint64_t dropout_draw;
    // stochastic depth (gpt2_set_drop_path; 0: off): the (B, L, 2) scales of
    // the last train forward (drop_path.h), drawn from the seed and the draw
    // or fixed by gpt2_set_drop_path_scales, applied while drop_path_active
    float drop_path;
    uint64_t drop_path_seed;
    float *drop_scales;       // (drop_scales_B, L, 2)
    int drop_scales_B;
    const float *drop_scales_fixed; // the caller's (B, L, 2), or NULL
    int drop_path_active;
    // matmul precision (gpt2_set_matmul_precision): NULL in fp32; in bf16
    // every parameter's and cbwc's centred weights' bf16 copies, rounded from
    // the fp32 masters once per step (after each update)
    MatmulEngine *matmul_engine;
    uint16_t *params_bf16;    // num_parameters, params_memory's layout
    uint16_t *centred_bf16;   // centred_memory's layout
    int bf16_stale;           // params_bf16 is not the rounding of params_memory
    int centred_bf16_stale;   // centred_bf16 is not the rounding of centred_memory
    GPT2GradsReady grads_ready; // NULL: none (gpt2_set_grads_ready)
    void *grads_ready_ctx;
    int *inputs;        // (B, T) copy of the last forward's tokens
    int *targets;       // (B, T) or unused when the forward had none
    float mean_loss;    // -1 when the forward had no targets
    int loss_tokens;    // targets >= 0 in the last forward (a target of -1 has no loss)
} GPT2;

// Sizes of the 16 parameter tensors in llm.c's order.
void gpt2_param_sizes(size_t sizes[GPT2_NUM_PARAM_TENSORS], const GPT2Config *config);

// Name of parameter tensor i ("wte", ...), in the file's order; "?" out of range.
const char *gpt2_param_name(int i);
// Checks a model file's header (magic, version 3, config, norm mode, the
// folded slots) without reading further; 0, or -1 with the reason in err.
int gpt2_header_parse(const int32_t header[256], GPT2Config *config, NormMode *mode, char *err,
                      size_t err_bytes);
// Parses a model file from r (docs/formats.md: header, exact size, every
// parameter finite, for a folded file the row means); 0, or -1 with the
// reason in err and the model freed. Never exits.
int gpt2_read(GPT2 *model, Reader *r, char *err, size_t err_bytes);
// Loads an llm.c model file (magic 20240326, version 3); the norm mode comes
// from header slot 8. Dies with a message naming the file on any defect.
void gpt2_load(GPT2 *model, const char *path);
// Random init in llm.c's style: N(0, 0.02), residual projections
// N(0, 0.02/sqrt(2L)), biases 0, gains 1.
void gpt2_init_random(GPT2 *model, const GPT2Config *config, NormMode mode, unsigned long long seed);
// Parses "d12" style descriptors: d<L>, optionally followed by c<C> h<NH>
// v<V> t<maxT> in any order (d2, d8, d4c128, d4c128h4v256t256). Defaults:
// C from the GPT-2 family (d6 384, d12 768, d24 1024, d36 1280, d48 1600;
// other depths 64 per layer, GPT-2 small's proportion), heads of 64 channels,
// V 50257, maxT 1024. Returns 0 on success, -1 if the string is not a
// descriptor; gpt2_config_error checks the sizes it gives.
int gpt2_parse_descriptor(const char *descriptor, GPT2Config *config);
// Checks a config (positive sizes, C % NH, V <= Vp); returns NULL or a reason.
const char *gpt2_config_error(const GPT2Config *config);
// Writes the model file atomically (header with the mode in slot 8, params).
void gpt2_save(const GPT2 *model, const char *path);

// Forward over tokens (B, T); targets may be NULL (no loss). T <= maxT and
// every token < V are the caller's to check. A target of -1 masks its
// position out of the loss (SFT: prompt tokens); mean_loss is the mean over
// the loss_tokens other positions.
void gpt2_forward(GPT2 *model, const int *inputs, const int *targets, int B, int T);
// Train-mode residual dropout (docs/math.md section 6): with probability p
// each element of the attention and MLP branch outputs is zeroed before the
// residual add, the others scaled by 1/(1-p); the masks depend on the seed
// and the draw number of gpt2_forward_train only. 0 <= p < 1; 0 turns it off.
void gpt2_set_resid_dropout(GPT2 *model, float p, uint64_t seed);
// Train-mode stochastic depth (llmc/kernels/drop_path.h, docs/math.md
// section 6): each sample's attention and MLP branch of block l of L is
// dropped with probability rate * l / (L - 1), else scaled by 1/(1-p); the
// masks of gpt2_forward_train's draw come from drop_path_draw seeded by
// drop_path_draw_seed(seed, draw). 0 <= rate < 1; 0 turns it off. Not with
// residual dropout (dies).
void gpt2_set_drop_path(GPT2 *model, float rate, uint64_t seed);
// Every following gpt2_forward_train applies these (B, L, 2) scales (the
// caller's, kept by pointer; B the forwards' batch) instead of drawing; NULL:
// back to gpt2_set_drop_path's draws. For the reference checks.
void gpt2_set_drop_path_scales(GPT2 *model, const float *scales);
// gpt2_forward in train mode: the dropout masks of draw `draw` (one draw per
// micro-batch; the same draw gives the same masks). Evaluation uses gpt2_forward.
void gpt2_forward_train(GPT2 *model, const int *inputs, const int *targets, int B, int T,
                        uint64_t draw);
// The weights the forward runs the stream-writing projections (attn c_proj,
// mlp c_proj) with: the parameters, or in cbwc the effective V = P W and P b
// (recomputed here when an update made them stale). Valid until the next update.
typedef struct {
    const float *attprojw, *attprojb, *fcprojw, *fcprojb;
} GPT2StreamWeights;
GPT2StreamWeights gpt2_stream_weights(GPT2 *model);
// The tied LM head on N rows of the final norm's output lnf (N, C): logits
// (N, Vp) = lnf wte^T, plus m_t sum_c h_c for a folded model.
void gpt2_head_forward(const GPT2 *model, float *logits, const float *lnf, int N);
// The linear layers' matmul precision (matmul.h): fp32 (the default), bf16
// (bf16 inputs, fp32 accumulation, outputs, master weights, AdamW, norms,
// attention, softmax, GELU and loss) or dnnl-fp32. Dies with a clear message
// where the build lacks oneDNN.
void gpt2_set_matmul_precision(GPT2 *model, MatmulPrecision precision);
void gpt2_zero_grad(GPT2 *model);
// Accumulates parameter gradients of loss_scale * sum of per-token losses
// (loss_scale = 1/(B*T) for the mean loss of one micro-batch). Needs a
// forward with targets first; consumes the logits.
void gpt2_backward(GPT2 *model, float loss_scale);
// The backward's hook (NULL: none, the default); e.g. gpt2/grad_overlap.h.
void gpt2_set_grads_ready(GPT2 *model, GPT2GradsReady fn, void *ctx);
// One AdamW step with gradient clipping (clip <= 0: none); decay on the
// matrices only (wte, wpe, qkvw, attprojw, fcw, fcprojw).
void gpt2_update(GPT2 *model, const AdamWConfig *cfg, float grad_clip);
// AdamW on the parameters [lo, hi) only (a ZeRO-1 shard; the caller
// all-gathers the parameters afterwards), grads scaled by grad_scale.
void gpt2_update_shard(GPT2 *model, const AdamWConfig *cfg, float grad_scale, size_t lo,
                       size_t hi);
void gpt2_free(GPT2 *model);

#endif
