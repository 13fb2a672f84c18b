// Debug states written by the PyTorch references (docs/formats.md): the
// GPT-2 one (llm.c's format, magic 20240327; dev/reference/gpt2.py) and the
// vision one (magic 20261130; dev/reference/vit.py, swin.py), read by
// test_gpt2 and test_vit. The parsers never exit (llmc/core/reader.h); the loaders
// die naming the file.
#ifndef FOLDNORM_DEBUG_STATE_H
#define FOLDNORM_DEBUG_STATE_H

#include <stddef.h>

#include "kernels/adamw.h"
#include "gpt2/gpt2.h"
#include "core/reader.h"

#define GPT2_STATE_MAGIC 20240327
#define GPT2_STATE_VERSION 2
#define VISION_STATE_MAGIC 20261130
#define VISION_STATE_VERSION 1

typedef struct {
    int B, T, num_steps;
    AdamWConfig adamw;
    float grad_clip;
    int *x, *y;     // (B, T); a target of -1 is masked out of the loss
    float *logits;  // (B, T, V)
    float loss;
    float *grads;   // num_parameters, the model file's order
    float *losses;  // num_steps: loss k after k AdamW steps
} GPT2DebugState;

// Parses a GPT-2 debug state for a model of context max_seq_len, vocab_size
// and num_parameters: magic, version, 1 <= B <= 2^16, 1 <= T <= maxT, the
// step count, the exact size, x in [0, V), y in [-1, V). 0, or -1 with the
// reason in err and nothing allocated.
int gpt2_debug_state_parse(GPT2DebugState *s, Reader *r, int max_seq_len, int vocab_size,
                           size_t num_parameters, char *err, size_t err_bytes);
void gpt2_debug_state_load(GPT2DebugState *s, const char *path, const GPT2 *model);
void gpt2_debug_state_free(GPT2DebugState *s);

typedef struct {
    int B, num_steps;
    AdamWConfig adamw;
    float grad_clip, smoothing;
    float *images;  // (B, Cin, S, S)
    int *labels;    // B
    float *logits;  // (B, K)
    float loss;
    float *grads;   // num_parameters
    float *losses;  // num_steps
} VisionDebugState;

// Parses a vision debug state for a model of this family, image size S,
// channels Cin, K classes and num_parameters: magic, version, the family,
// 1 <= B <= 2^16, the step count, the exact size, labels in [0, K). 0, or -1
// with the reason in err and nothing allocated.
int vision_debug_state_parse(VisionDebugState *s, Reader *r, int family, int image_size,
                             int image_channels, int num_classes, size_t num_parameters,
                             char *err, size_t err_bytes);
void vision_debug_state_free(VisionDebugState *s);

#endif
