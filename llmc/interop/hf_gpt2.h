// GPT-2 in Hugging Face's layout (transformers' GPT2LMHeadModel): tensor
// names transformer.h.N.attn.c_attn.weight ... (with or without the
// "transformer." prefix), Conv1D weights stored [in, out] (the transpose of
// llm.c's (OC, IC)), the LM head tied to wte, and config.json.
#ifndef FOLDNORM_HF_GPT2_H
#define FOLDNORM_HF_GPT2_H

#include <stddef.h>

#include "gpt2/gpt2.h"
#include "safetensors.h"

typedef struct {
    int n_layer, n_head, n_embd, n_positions, vocab_size;
} HfGpt2Config;

// Parses config.json text[0..len): the five sizes, and refuses what our
// GPT-2 does not compute (an activation other than gelu_new, a layer-norm
// epsilon other than 1e-5, scale_attn_by_inverse_layer_idx, an untied head).
// 0, or -1 with the reason in err. Never exits.
int hf_gpt2_config_parse(const char *text, size_t len, HfGpt2Config *cfg, char *err, size_t err_bytes);

// Fills model (mode ln; Vp = V rounded up to a multiple of 128 as llm.c
// does, padded rows zero) from the tensors in files[0..num_files). Every
// tensor must be present once with its exact shape; lm_head.weight, if
// present, must equal wte; the causal-mask buffers attn.bias and
// attn.masked_bias are skipped; any other tensor is an error. 0, or -1 with
// the reason in err (the model then freed). Never exits.
int hf_gpt2_import(GPT2 *model, const HfGpt2Config *cfg, const Safetensors *files, int num_files,
                   char *err, size_t err_bytes);

// Writes DIR/model.safetensors (fp32, "transformer." names, no lm_head: tied)
// and DIR/config.json. An ln model as it is; a cbwc model as the LayerNorm
// GPT-2 of its proxy weights, the same function (docs/math.md). Dies on an
// rms or folded model (no LayerNorm GPT-2 computes them) or an I/O error.
void hf_gpt2_export(const GPT2 *model, const char *dir);

#endif
