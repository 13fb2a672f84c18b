// train_gpt2.cu's micro-batches: llmc/gpt2/token_prefetch.h's host thread
// prepares the next batch and its token buckets in page-locked memory
// while the GPU runs; the forward copies a batch asynchronously and records
// its slot's event after the copies; the slot goes back to the thread only
// once that event has passed.
#ifndef FOLDNORM_GPT2_FEED_CUH
#define FOLDNORM_GPT2_FEED_CUH

#include "cuda_common.cuh"
#include "pinned.cuh"

extern "C" {
#include "gpt2/token_prefetch.h"
}

typedef struct {
    TokenPrefetch *prefetch;
    cudaEvent_t copied[TOKEN_PREFETCH_SLOTS]; // per slot: the GPU's copies out of it are done
    int held; // the slot of the batch taken last, whose copies are queued; -1: none
} Gpt2Feed;

// starts the host thread on loader (it owns the loader until gpt2_feed_free);
// same_batch: the loader's current batch every time (-a)
static inline void gpt2_feed_init(Gpt2Feed *f, DataLoader *loader, int same_batch, int vocab_size) {
    const TokenBatchAllocator pinned = {cuda_pinned_alloc, cuda_pinned_free};
    f->prefetch = token_prefetch_create(loader, same_batch, vocab_size, pinned);
    for (int s = 0; s < TOKEN_PREFETCH_SLOTS; s++) {
        CUDA_CHECK(cudaEventCreateWithFlags(&f->copied[s], cudaEventDisableTiming));
    }
    f->held = -1;
}

// The next micro-batch and the event its forward records after copying it
// (gpt2cuda_forward_batch). First the batch taken before goes back to the
// thread once the GPU has copied it: its copies were queued at the start of
// the micro-step before, so the host waits at most until the GPU starts
// that micro-step, never for one to finish.
static inline const TokenBatch *gpt2_feed_next(Gpt2Feed *f, cudaEvent_t *copied) {
    if (f->held >= 0) {
        CUDA_CHECK(cudaEventSynchronize(f->copied[f->held]));
        token_prefetch_release(f->prefetch);
    }
    const TokenBatch *b = token_prefetch_take(f->prefetch);
    f->held = b->slot;
    *copied = f->copied[b->slot];
    return b;
}

// the loader's position before the next batch (a checkpoint's; waits for the thread)
static inline void gpt2_feed_position(Gpt2Feed *f, int *epoch, int *shard_cursor,
                                      size_t *batch_cursor) {
    token_prefetch_position(f->prefetch, epoch, shard_cursor, batch_cursor);
}

// joins the thread (after the GPU's last copies) and frees the slots
static inline void gpt2_feed_free(Gpt2Feed *f) {
    CUDA_CHECK(cudaDeviceSynchronize());
    token_prefetch_free(f->prefetch);
    for (int s = 0; s < TOKEN_PREFETCH_SLOTS; s++) CUDA_CHECK(cudaEventDestroy(f->copied[s]));
    memset(f, 0, sizeof(*f));
}

#endif
