// Train-mode (inverted) dropout with a stateless mask, as torch.nn.Dropout:
// element i of mask stream s is kept iff u(seed, s, i) >= p and a kept value
// is scaled by 1/(1-p). u is a hash of (seed, s, i) on the 2^-24 grid in
// [0, 1), so the backward recomputes the forward's mask, any thread order
// gives the same mask, and a resumed run draws the masks it would have drawn.
#ifndef FOLDNORM_DROPOUT_H
#define FOLDNORM_DROPOUT_H

#include <stddef.h>
#include <stdint.h>

// u(seed, stream, i) (docs/formats.md gives the hash, for references to redo it).
float dropout_uniform(uint64_t seed, uint64_t stream, uint64_t i);
// out[i] = in[i] * keep_i / (1 - p) for i < n; out may be in. Also the
// backward: the gradient goes through the same mask and scale. 0 <= p < 1.
void dropout_apply(float *out, const float *in, size_t n, float p, uint64_t seed, uint64_t stream);

// The mask stream of residual branch `branch` (0 attention, 1 MLP) of layer l
// in dropout draw `draw` of a model with num_layers layers: every (draw, l,
// branch) its own stream. llmc/gpt2/gpt2.c and the GPU's llmc/cuda/gpt2_cuda.cuh
// both take their streams from here, so they draw the same masks.
static inline uint64_t dropout_branch_stream(uint64_t draw, int num_layers, int l, int branch) {
    return (draw * (uint64_t)num_layers + (uint64_t)l) * 2 + (uint64_t)branch;
}

#endif
