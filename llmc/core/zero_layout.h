// ZeRO-1's one description of which rank owns which slice of a flat
// parameter vector, for the CPU (core/comm.c) and the GPU (cuda/zero_shard.cuh,
// cuda/vision_grad_sync.cuh): checkpoints, the reduce-scatter and the
// all-gather all ask it. The vector is cut into chunks (the whole vector, or
// GPT-2 on the GPU one per tensor and layer, so a layer's gradients can be
// reduced as soon as its backward is done); rank r of W owns slice r of every
// chunk. A chunk of n values: slices of n / W values, and the n % W left
// over go by the rule below.
#ifndef FOLDNORM_ZERO_LAYOUT_H
#define FOLDNORM_ZERO_LAYOUT_H

#include <stddef.h>

typedef enum {
    ZERO_SPREAD, // the first n % W ranks own one value more (the CPU's MPI collectives)
    ZERO_TAIL,   // the last n % W values are a tail every rank updates (vision on the GPU)
    ZERO_EXACT,  // n % W must be 0 (GPT-2 on the GPU: NCCL's equal slices per chunk)
} ZeroRemainder;

typedef struct {
    size_t offset, count; // in the flat vector
} ZeroSlice;

// Rank `rank`'s slice of the chunk of n values at chunk_offset.
ZeroSlice zero_slice(size_t chunk_offset, size_t n, int rank, int world, ZeroRemainder rule);
// The chunk's tail, after the slices: under ZERO_TAIL its last n % W values,
// else none (count 0 at the chunk's end).
ZeroSlice zero_tail(size_t chunk_offset, size_t n, int world, ZeroRemainder rule);
// Whether the rule can cut n values over world ranks (ZERO_EXACT: n % world == 0).
int zero_cuts(size_t n, int world, ZeroRemainder rule);

#endif
