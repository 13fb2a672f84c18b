// ZeRO-1 sharding of GPT-2's flat parameter vector over W ranks
// (core/zero_layout.h, ZERO_EXACT). The vector is a sequence of chunks: every
// per-layer tensor of the tensor table (ln1w .. fcprojb) is L chunks, one per
// layer, the others (wte, wpe, lnfw, lnfb) one chunk each. Rank r owns slice
// r of every chunk (chunk_n / W values), so a layer's
// gradients can be reduce-scattered as soon as its backward is done. The
// rank's slices, in the flat order, form its compact shard (P / W values):
// the reduced gradients and the AdamW moments live there. W = 1: one shard,
// the compact order is the flat order.
#ifndef FOLDNORM_ZERO_SHARD_CUH
#define FOLDNORM_ZERO_SHARD_CUH

#include <stddef.h>

extern "C" {
#include "gpt2/gpt2.h"
#include "core/utils.h"
#include "core/zero_layout.h"
}

typedef struct {
    size_t offset;       // in the flat vector
    size_t shard_offset; // of this tensor's slices in the compact shard
    size_t chunk_n;      // values per chunk (a layer's slice of the tensor, or all of it)
    size_t slice;        // chunk_n / world: each rank's part of a chunk
    int chunks;          // L or 1
} ShardTensor;

typedef struct {
    int rank, world;
    ShardTensor tensors[GPT2_NUM_PARAM_TENSORS];
    size_t shard_params; // num_parameters / world
} ShardLayout;

// Dies unless every chunk divides by world (C % world == 0 suffices).
static inline void shard_layout_init(ShardLayout *s, const size_t *sizes, int num_layers, int rank,
                                     int world) {
    s->rank = rank;
    s->world = world;
    size_t offset = 0, shard_offset = 0;
    for (int i = 0; i < GPT2_NUM_PARAM_TENSORS; i++) {
        ShardTensor *t = &s->tensors[i];
        t->chunks = gpt2_tensor_info(i)->per_layer ? num_layers : 1;
        t->chunk_n = sizes[i] / (size_t)t->chunks;
        if (!zero_cuts(t->chunk_n, world, ZERO_EXACT)) {
            fatal("ZeRO-1 over %d ranks: parameter tensor %d has chunks of %zu values, not a "
                  "multiple of the ranks (use -z 0, or C a multiple of the ranks)",
                  world, i, t->chunk_n);
        }
        t->slice = zero_slice(0, t->chunk_n, rank, world, ZERO_EXACT).count;
        t->offset = offset;
        t->shard_offset = shard_offset;
        offset += sizes[i];
        shard_offset += t->slice * (size_t)t->chunks;
    }
    s->shard_params = shard_offset;
}

// flat index of chunk c's start in tensor t, and of this rank's slice in it
static inline size_t shard_chunk_offset(const ShardTensor *t, int c) {
    return t->offset + (size_t)c * t->chunk_n;
}
static inline size_t shard_slice_offset(const ShardLayout *s, const ShardTensor *t, int c) {
    return zero_slice(shard_chunk_offset(t, c), t->chunk_n, s->rank, s->world, ZERO_EXACT).offset;
}

#endif
