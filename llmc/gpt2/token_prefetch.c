#include "token_prefetch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/utils.h"

struct TokenPrefetch {
    DataLoader *loader;
    int same_batch;
    TokenBatchAllocator allocator;
    TokenBatch slots[TOKEN_PREFETCH_SLOTS];
    long long filled, taken, released; // batch counters: slot = counter % SLOTS
    int stopping;
    pthread_mutex_t lock;
    pthread_cond_t slot_free;   // a release, or stop
    pthread_cond_t batch_ready; // a fill is done
    pthread_t thread;
};

#define PTHREAD_CHECK(call)                                                                    \
    do {                                                                                       \
        int rc_ = (call);                                                                      \
        if (rc_ != 0) fatal("token_prefetch: %s: %s", #call, strerror(rc_));                   \
    } while (0)

void token_batch_init(TokenBatch *b, int max_B, int max_T, int vocab_size, int with_buckets,
                      TokenBatchAllocator allocator) {
    memset(b, 0, sizeof(*b));
    const size_t n = (size_t)max_B * (size_t)max_T;
    if (max_B <= 0 || max_T <= 0 || n > (size_t)1 << 30) {
        fatal("token_batch_init: B=%d T=%d", max_B, max_T);
    }
    // inputs, targets; with buckets also their token, start (n + 1), rows and pieces
    const size_t ints = 2 * n + (with_buckets ? 3 * n + 1 + token_pieces_ints((int)n) : 0);
    const size_t bytes = ints * sizeof(int);
    b->storage_ints = ints;
    b->storage = allocator.alloc_bytes != NULL ? allocator.alloc_bytes(bytes)
                                               : malloc_check(bytes, "token batch");
    if (b->storage == NULL) fatal("token_batch_init: could not allocate %zu bytes", bytes);
    b->inputs = b->storage;
    b->targets = b->storage + n;
    b->has_buckets = with_buckets;
    if (with_buckets) {
        token_buckets_init_at(&b->buckets, vocab_size, (int)n, b->storage + 2 * n);
        token_pieces_init_at(&b->pieces, (int)n, b->storage + 5 * n + 1);
    }
}

void token_batch_fill(TokenBatch *b, const int *inputs, const int *targets, int B, int T) {
    const int n = B * T;
    b->B = B;
    b->T = T;
    memcpy(b->inputs, inputs, (size_t)n * sizeof(int));
    b->has_targets = targets != NULL;
    b->counted = 0;
    if (targets != NULL) {
        memcpy(b->targets, targets, (size_t)n * sizeof(int));
        for (int i = 0; i < n; i++) b->counted += targets[i] >= 0;
    }
    if (b->has_buckets) {
        token_buckets_build(&b->buckets, inputs, n);
        token_pieces_build(&b->pieces, &b->buckets);
    }
}

void token_batch_free(TokenBatch *b, TokenBatchAllocator allocator) {
    if (b->has_buckets) token_buckets_free(&b->buckets);
    if (b->storage != NULL) {
        if (allocator.free_bytes != NULL) {
            allocator.free_bytes(b->storage);
        } else {
            free(b->storage);
        }
    }
    memset(b, 0, sizeof(*b));
}

// fills slot `filled % SLOTS` whenever it is free; the loader is touched only here
static void *fill_main(void *arg) {
    TokenPrefetch *p = arg;
    DataLoader *l = p->loader;
    PTHREAD_CHECK(pthread_mutex_lock(&p->lock));
    while (!p->stopping) {
        if (p->filled - p->released >= TOKEN_PREFETCH_SLOTS) {
            PTHREAD_CHECK(pthread_cond_wait(&p->slot_free, &p->lock));
            continue;
        }
        TokenBatch *b = &p->slots[p->filled % TOKEN_PREFETCH_SLOTS];
        PTHREAD_CHECK(pthread_mutex_unlock(&p->lock));
        b->epoch = l->epoch;
        b->shard_cursor = l->shard_cursor;
        b->batch_cursor = l->batch_cursor;
        if (!p->same_batch) dataloader_next_batch(l);
        token_batch_fill(b, l->inputs, l->targets, l->B, l->T);
        PTHREAD_CHECK(pthread_mutex_lock(&p->lock));
        p->filled++;
        PTHREAD_CHECK(pthread_cond_broadcast(&p->batch_ready));
    }
    PTHREAD_CHECK(pthread_mutex_unlock(&p->lock));
    return NULL;
}

TokenPrefetch *token_prefetch_create(DataLoader *loader, int same_batch, int vocab_size,
                                     TokenBatchAllocator allocator) {
    TokenPrefetch *p = calloc_check(1, sizeof(*p), "token prefetch");
    p->loader = loader;
    p->same_batch = same_batch;
    p->allocator = allocator;
    for (int s = 0; s < TOKEN_PREFETCH_SLOTS; s++) {
        token_batch_init(&p->slots[s], loader->B, loader->T, vocab_size, 1, allocator);
        p->slots[s].slot = s;
    }
    PTHREAD_CHECK(pthread_mutex_init(&p->lock, NULL));
    PTHREAD_CHECK(pthread_cond_init(&p->slot_free, NULL));
    PTHREAD_CHECK(pthread_cond_init(&p->batch_ready, NULL));
    PTHREAD_CHECK(pthread_create(&p->thread, NULL, fill_main, p));
    return p;
}

// waits until the next batch to take is filled (lock held)
static TokenBatch *next_filled(TokenPrefetch *p) {
    while (p->taken >= p->filled) PTHREAD_CHECK(pthread_cond_wait(&p->batch_ready, &p->lock));
    return &p->slots[p->taken % TOKEN_PREFETCH_SLOTS];
}

const TokenBatch *token_prefetch_take(TokenPrefetch *p) {
    PTHREAD_CHECK(pthread_mutex_lock(&p->lock));
    const TokenBatch *b = next_filled(p);
    p->taken++;
    PTHREAD_CHECK(pthread_mutex_unlock(&p->lock));
    return b;
}

void token_prefetch_release(TokenPrefetch *p) {
    PTHREAD_CHECK(pthread_mutex_lock(&p->lock));
    if (p->released >= p->taken) fatal("token_prefetch_release: no batch taken to release");
    p->released++;
    PTHREAD_CHECK(pthread_cond_signal(&p->slot_free));
    PTHREAD_CHECK(pthread_mutex_unlock(&p->lock));
}

void token_prefetch_position(TokenPrefetch *p, int *epoch, int *shard_cursor,
                             size_t *batch_cursor) {
    PTHREAD_CHECK(pthread_mutex_lock(&p->lock));
    const TokenBatch *b = next_filled(p);
    *epoch = b->epoch;
    *shard_cursor = b->shard_cursor;
    *batch_cursor = b->batch_cursor;
    PTHREAD_CHECK(pthread_mutex_unlock(&p->lock));
}

void token_prefetch_free(TokenPrefetch *p) {
    if (p == NULL) return;
    PTHREAD_CHECK(pthread_mutex_lock(&p->lock));
    p->stopping = 1;
    PTHREAD_CHECK(pthread_cond_signal(&p->slot_free));
    PTHREAD_CHECK(pthread_mutex_unlock(&p->lock));
    PTHREAD_CHECK(pthread_join(p->thread, NULL));
    PTHREAD_CHECK(pthread_mutex_destroy(&p->lock));
    PTHREAD_CHECK(pthread_cond_destroy(&p->slot_free));
    PTHREAD_CHECK(pthread_cond_destroy(&p->batch_ready));
    for (int s = 0; s < TOKEN_PREFETCH_SLOTS; s++) token_batch_free(&p->slots[s], p->allocator);
    free(p);
}
