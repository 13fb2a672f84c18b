// ONNX out: a GPT-2 model (ln, rms, cbwc or folded) as an fp32 ONNX graph,
// token ids idx (int64, [B, T]) -> logits (float, [B, T, V]), the weights as
// initializers (docs/formats.md, "ONNX export"). The protobuf encoding is
// protobuf-c's, generated at build time from ONNX's own schema.
#ifndef FOLDNORM_ONNX_EXPORT_H
#define FOLDNORM_ONNX_EXPORT_H

#include <stddef.h>

#include "gpt2/gpt2.h"

// Writes the model's ONNX graph to path (atomically); dies with a message
// naming the file on an I/O error. Returns the file's size in bytes.
size_t gpt2_onnx_save(const GPT2 *model, const char *path);

#endif
