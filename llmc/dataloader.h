// Reads llm.c token shards (magic 20240520, uint16 tokens) matched by a glob
// pattern, and hands out (B, T) batches of inputs and next-token targets in
// order, moving on to the next shard (and wrapping around) at the end.
#ifndef FOLDNORM_DATALOADER_H
#define FOLDNORM_DATALOADER_H

#include <stddef.h>
#include <stdint.h>

#define SHARD_MAGIC 20240520
#define SHARD_VERSION 1

typedef struct {
    int B;
    int T;
    int vocab_size;
    char **paths;
    int num_shards;
    int shard_index;    // shard currently loaded
    size_t position;    // next token to read in it
    uint16_t *tokens;   // the loaded shard
    size_t num_tokens;
    int *inputs;        // (B, T)
    int *targets;       // (B, T)
    size_t total_tokens; // over all shards
} DataLoader;

// Dies with a message naming the pattern or the shard if nothing matches, a
// shard is malformed, too short for one batch, or holds a token >= vocab_size.
void dataloader_init(DataLoader *loader, const char *pattern, int B, int T, int vocab_size);
void dataloader_next_batch(DataLoader *loader);
void dataloader_reset(DataLoader *loader);
// Restores a position saved from shard_index and position (a checkpoint).
void dataloader_seek(DataLoader *loader, int shard_index, size_t position);
// Number of whole batches in one pass over all shards.
size_t dataloader_batches_per_epoch(const DataLoader *loader);
void dataloader_free(DataLoader *loader);

// Reads and checks one shard; returns its tokens (caller frees) and count.
uint16_t *shard_read(const char *path, size_t *num_tokens, size_t min_tokens, int vocab_size);

#endif
