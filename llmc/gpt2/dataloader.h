// Reads token shards matched by a glob pattern and hands out (B, T) batches
// of inputs and next-token targets. Two shard kinds (docs/formats.md):
//   llm.c token shards (magic 20240520): uint16 tokens
//   SFT shards (magic 20241202): uint16 tokens + a uint8 loss mask per token;
//     a target whose mask is 0 (prompt) comes out as -1 (no loss).
// Each shard is cut into samples of T+1 tokens at stride T (inputs cover
// every token but a shard's last, once); a batch is B samples. Every epoch,
// with shuffling on, the order of the shards and of the samples inside each
// shard are permutations drawn from (seed, epoch[, shard]); off, both are in
// order. For data parallel runs, rank r of W takes batches r, r+W, r+2W, ...
// of each shard (disjoint slices that together cover the data). The whole
// position is (epoch, shard_cursor, batch_cursor): no RNG state to save.
#ifndef FOLDNORM_DATALOADER_H
#define FOLDNORM_DATALOADER_H

#include <stddef.h>
#include <stdint.h>

#include "core/reader.h"

#define SHARD_MAGIC 20240520
#define SHARD_VERSION 1
#define SFT_SHARD_MAGIC 20241202
#define SFT_SHARD_VERSION 1

typedef struct {
    int B;
    int T;
    int vocab_size;
    int rank, world; // this process's slice of each shard
    int shuffle;     // permute shards and samples every epoch
    uint64_t seed;
    char **paths;
    int num_shards;
    size_t *shard_tokens; // tokens in each shard
    size_t total_tokens;  // over all shards
    int is_sft;           // the shards carry loss masks
    // position
    int epoch;
    int shard_cursor;    // index into shard_order
    size_t batch_cursor; // batches of this rank served from the current shard
    int *shard_order;    // this epoch's order of the shards
    // the current shard
    int shard_index; // shard_order[shard_cursor], loaded
    uint16_t *tokens;
    uint8_t *mask; // SFT shards only
    size_t num_tokens;
    size_t *sample_order;    // (num_tokens - 1) / T samples, this epoch's order
    size_t batches_in_shard; // for this rank
    int *inputs;             // (B, T)
    int *targets;            // (B, T), -1 = no loss
} DataLoader;

// Dies with a message naming the pattern or the shard if nothing matches, a
// shard is malformed, too short for one batch per rank, holds a token >=
// vocab_size, or the shards mix kinds. rank in [0, world).
void dataloader_init(DataLoader *loader, const char *pattern, int B, int T, int vocab_size,
                     int rank, int world, int shuffle, uint64_t seed);
void dataloader_next_batch(DataLoader *loader);
// Back to epoch 0, the first batch.
void dataloader_reset(DataLoader *loader);
// Restores a position read from a checkpoint (dies if it is out of range).
void dataloader_seek(DataLoader *loader, int epoch, int shard_cursor, size_t batch_cursor);
// Number of batches this rank gets in one epoch.
size_t dataloader_batches_per_epoch(const DataLoader *loader);
void dataloader_free(DataLoader *loader);

// Writes n tokens as an llm.c token shard (magic 20240520), atomically.
void shard_write(const char *path, const uint16_t *tokens, size_t n);

// One shard's content: tokens and, for an SFT shard, the loss mask (else NULL).
typedef struct {
    uint16_t *tokens;
    uint8_t *mask;
    size_t num_tokens;
} Shard;

// Parses a shard of either kind from r (magic, version, exact size, at least
// min_tokens tokens, every token < vocab_size, mask bytes 0/1); 0, or -1 with
// the reason in err (nothing allocated). Never exits.
int shard_parse(Reader *r, Shard *out, size_t min_tokens, int vocab_size, char *err,
                size_t err_bytes);
void shard_free(Shard *shard);

// Reads and checks one shard of either kind; returns its tokens (caller
// frees), count and, for an SFT shard, *mask (caller frees; NULL otherwise).
uint16_t *shard_read(const char *path, size_t *num_tokens, uint8_t **mask, size_t min_tokens,
                     int vocab_size);

#endif
