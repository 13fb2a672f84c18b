// Training batches built ahead on a pool of host threads (pthreads), so that
// the GPU trainer (train_vit.cu) need not wait for the augmentation between
// steps. The caller submits batches in training order; each submit draws the
// batch's augmentation from the caller's Rng at once, on the caller's thread
// and in image order (vision_draw_augment), so the batches, and the Rng
// after them, are bit-identical to vision_make_batch's called in the same
// order; the workers only render pixels (and erase, batch_augment.h; the
// worker that renders a batch's last image mixes it). Batches come back in submit order.
#ifndef FOLDNORM_BATCH_PREFETCH_H
#define FOLDNORM_BATCH_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

#include "core/rand.h"
#include "vision_data.h"

// Where the batch buffers come from: NULL functions mean malloc / free; the
// GPU trainer passes page-locked memory (cudaMallocHost) so that its
// cudaMemcpyAsync of a batch is a true asynchronous DMA.
typedef struct {
    void *(*alloc_bytes)(size_t bytes);
    void (*free_bytes)(void *p);
} BatchBufferAllocator;

typedef struct BatchPrefetch BatchPrefetch;

// Up to `depth` batches of B images of s queued at once, built by `workers`
// threads (0: each batch is built inside batch_prefetch_submit, on the
// caller's thread). s must outlive the prefetcher. Dies on a failed
// allocation or thread start.
BatchPrefetch *batch_prefetch_create(const VisionSplit *s, int B, int depth, int workers,
                                     BatchBufferAllocator allocator);
// The batch-level ops (erasing, mixup / cutmix) of the batches submitted
// from now on (before the first submit); NULL: none (the default).
void batch_prefetch_set_augment(BatchPrefetch *p, const BatchAugment *augment);
// Queues the batch of images indices[0..B) (copied); its augmentation is drawn
// from rng now (NULL: none). At most depth batches may be queued.
void batch_prefetch_submit(BatchPrefetch *p, const int *indices, Rng *rng);
// Waits for the oldest queued batch and hands out its images (B, Cin, S, S)
// and labels. They stay valid and untouched until the batch_prefetch_submit
// that follows the next batch_prefetch_take (depth + 1 buffers: the queue plus
// this one), so the GPU may still be copying them while the queue refills.
void batch_prefetch_take(BatchPrefetch *p, const float **images, const int **labels);
// The mixed targets of the batch the last take handed out (valid as long as
// its images), or {NULL, NULL} when it is unmixed.
MixTargets batch_prefetch_taken_mix(const BatchPrefetch *p);
// Batches submitted and not yet taken.
int batch_prefetch_queued(const BatchPrefetch *p);
// The Rng state before the oldest queued batch's draws (what a trainer that
// builds each batch when it needs it would hold now, e.g. for a checkpoint);
// 0 when nothing is queued (then the caller's Rng is that state). Batches
// submitted without an Rng record 0.
int batch_prefetch_pending_rng(const BatchPrefetch *p, uint64_t *state);
// Stops the workers (a batch being rendered is finished, queued ones are
// dropped), joins them and frees everything. NULL is allowed.
void batch_prefetch_free(BatchPrefetch *p);

#endif
