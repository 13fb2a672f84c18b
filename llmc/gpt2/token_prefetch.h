// GPT-2 micro-batches prepared ahead on a host thread for the GPU trainer
// (train_gpt2.cu): the data loader's next batch, its count of loss targets
// and its token buckets (the wte gradient's rows grouped by token,
// kernels/token_buckets.h) are built while the GPU runs the current
// micro-step, into buffers from the caller's allocator (page-locked there,
// so that the copies to the GPU are asynchronous). Batches come out in the
// loader's order, the same batches dataloader_next_batch would give in the
// loop. Two slots: the batch the GPU may still be copying from, and the
// next one, being filled.
#ifndef FOLDNORM_TOKEN_PREFETCH_H
#define FOLDNORM_TOKEN_PREFETCH_H

#include <stddef.h>

#include "gpt2/dataloader.h"
#include "kernels/token_buckets.h"

#define TOKEN_PREFETCH_SLOTS 2

// Where the batch buffers come from; NULL functions: malloc / free.
typedef struct {
    void *(*alloc_bytes)(size_t bytes);
    void (*free_bytes)(void *p);
} TokenBatchAllocator;

// One micro-batch as the GPU copies it: one allocation holds every array,
// so that the batch goes over in one copy.
typedef struct {
    int B, T;
    int *inputs, *targets; // (B, T); a target < 0 has no loss
    int has_targets;
    int counted;           // targets >= 0
    int has_buckets;
    TokenBuckets buckets;  // the rows of inputs grouped by token (with has_buckets)
    TokenPieces pieces;    // and cut into pieces for the GPU's sum
    int slot;              // the prefetcher's slot (0 .. TOKEN_PREFETCH_SLOTS - 1)
    // the loader's position before this batch (what a checkpoint saves)
    int epoch, shard_cursor;
    size_t batch_cursor;
    int *storage;          // inputs, targets, the buckets' token, start, rows, the pieces
    size_t storage_ints;
} TokenBatch;

// room for max_B x max_T tokens (and their buckets, with_buckets)
void token_batch_init(TokenBatch *b, int max_B, int max_T, int vocab_size, int with_buckets,
                      TokenBatchAllocator allocator);
// Copies (B, T) inputs and targets (NULL: none) in, counts the targets and
// builds the buckets (with has_buckets).
void token_batch_fill(TokenBatch *b, const int *inputs, const int *targets, int B, int T);
void token_batch_free(TokenBatch *b, TokenBatchAllocator allocator);

typedef struct TokenPrefetch TokenPrefetch;

// Starts the thread on loader (which it then owns until token_prefetch_free):
// each batch is loader's next one, or with same_batch its current one again
// (train_gpt2's -a: one batch overfitted). Dies on a failed allocation or start.
TokenPrefetch *token_prefetch_create(DataLoader *loader, int same_batch, int vocab_size,
                                     TokenBatchAllocator allocator);
// The next batch (waits for the thread when it is not ready). It stays
// untouched until the token_prefetch_release that follows.
const TokenBatch *token_prefetch_take(TokenPrefetch *p);
// The oldest batch taken and not released goes back to the thread for refilling.
void token_prefetch_release(TokenPrefetch *p);
// The loader's position before the next batch to be taken (a checkpoint's).
void token_prefetch_position(TokenPrefetch *p, int *epoch, int *shard_cursor,
                             size_t *batch_cursor);
// Stops and joins the thread (a batch being filled is finished), frees the slots.
void token_prefetch_free(TokenPrefetch *p);

#endif
