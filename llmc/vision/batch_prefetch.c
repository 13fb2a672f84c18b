#include "batch_prefetch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/utils.h"

// One batch in the ring: its buffers, its draws and how far its rendering is.
typedef struct {
    float *images;
    int *labels;
    int *indices;
    ImageAugment *augments;
    BatchAugmentDraws ops; // erasing and mix draws (batch_augment.h)
    int *labels2;          // the mixed targets (when ops.mix.active)
    float *lam;
    MixTargets mix;
    uint64_t rng_before; // the submitter's Rng state before this batch's draws
    int next_image;      // the first image no worker has claimed yet
    int done_images;     // images rendered
    int finished;        // rendered and mixed: ready to take
} PrefetchSlot;

struct BatchPrefetch {
    const VisionSplit *split;
    int B, depth, num_slots, chunk;
    size_t image_floats;
    BatchBufferAllocator allocator;
    BatchAugment augment;        // the batch-level ops (none until batch_prefetch_set_augment)
    const PrefetchSlot *last_taken;
    PrefetchSlot *slots;
    long long submitted, taken; // batch counters: slot = counter % num_slots
    int stopping;
    pthread_mutex_t lock;
    pthread_cond_t work_ready;  // a batch was submitted, or stop
    pthread_cond_t batch_ready; // a batch's last image was rendered
    pthread_t *threads;
    int num_threads;
};

#define PTHREAD_CHECK(call)                                                                    \
    do {                                                                                       \
        int rc_ = (call);                                                                      \
        if (rc_ != 0) fatal("batch_prefetch: %s: %s", #call, strerror(rc_));                   \
    } while (0)

static void *buffer_alloc(const BatchPrefetch *p, size_t bytes, const char *what) {
    if (p->allocator.alloc_bytes == NULL) return malloc_check(bytes, what);
    void *ptr = p->allocator.alloc_bytes(bytes);
    if (ptr == NULL) fatal("batch_prefetch: could not allocate %zu bytes for %s", bytes, what);
    return ptr;
}

static void buffer_free(const BatchPrefetch *p, void *ptr) {
    if (ptr == NULL) return;
    if (p->allocator.free_bytes == NULL) {
        free(ptr);
    } else {
        p->allocator.free_bytes(ptr);
    }
}

static void render_range(const BatchPrefetch *p, const PrefetchSlot *slot, int first, int count) {
    for (int b = first; b < first + count; b++) {
        float *image = slot->images + (size_t)b * p->image_floats;
        vision_render_image(image, slot->labels + b, p->split, slot->indices[b], &slot->augments[b]);
        random_erasing_apply(image, p->split->channels, p->split->side, p->split->side,
                             &slot->ops.erase[b]);
    }
}

// After the batch's last image: its mix (by the thread that rendered that image).
static void finish_batch(const BatchPrefetch *p, PrefetchSlot *slot) {
    slot->mix = batch_augment_mix(slot->images, slot->labels, slot->labels2, slot->lam, p->B,
                                  p->split->channels, p->split->side, &slot->ops);
}

// The oldest queued batch with unclaimed images, or NULL (lock held).
static PrefetchSlot *slot_with_work(BatchPrefetch *p) {
    for (long long n = p->taken; n < p->submitted; n++) {
        PrefetchSlot *slot = &p->slots[n % p->num_slots];
        if (slot->next_image < p->B) return slot;
    }
    return NULL;
}

static void *worker_main(void *arg) {
    BatchPrefetch *p = arg;
    PTHREAD_CHECK(pthread_mutex_lock(&p->lock));
    while (!p->stopping) {
        PrefetchSlot *slot = slot_with_work(p);
        if (slot == NULL) {
            PTHREAD_CHECK(pthread_cond_wait(&p->work_ready, &p->lock));
            continue;
        }
        const int first = slot->next_image;
        const int count = p->B - first < p->chunk ? p->B - first : p->chunk;
        slot->next_image += count;
        // the slot cannot be reused while it has unrendered images: take waits for them
        PTHREAD_CHECK(pthread_mutex_unlock(&p->lock));
        render_range(p, slot, first, count);
        PTHREAD_CHECK(pthread_mutex_lock(&p->lock));
        slot->done_images += count;
        if (slot->done_images == p->B) { // every image rendered: this worker mixes the batch
            PTHREAD_CHECK(pthread_mutex_unlock(&p->lock));
            finish_batch(p, slot);
            PTHREAD_CHECK(pthread_mutex_lock(&p->lock));
            slot->finished = 1;
            PTHREAD_CHECK(pthread_cond_broadcast(&p->batch_ready));
        }
    }
    PTHREAD_CHECK(pthread_mutex_unlock(&p->lock));
    return NULL;
}

BatchPrefetch *batch_prefetch_create(const VisionSplit *s, int B, int depth, int workers,
                                     BatchBufferAllocator allocator) {
    if (B < 1 || depth < 1 || workers < 0) {
        fatal("batch_prefetch: need B >= 1, depth >= 1, workers >= 0 (got %d, %d, %d)", B, depth,
              workers);
    }
    BatchPrefetch *p = malloc_check(sizeof(*p), "batch prefetch");
    memset(p, 0, sizeof(*p));
    p->split = s;
    p->B = B;
    p->depth = depth;
    p->num_slots = depth + 1; // + the taken batch, which the GPU may still be reading
    p->image_floats = (size_t)s->channels * s->side * s->side;
    // a shard image is milliseconds of work: one per claim; a Fashion-MNIST one
    // is a microsecond: a worker's share of the batch
    p->chunk = s->is_shard || workers == 0 ? 1 : (B + workers - 1) / workers;
    p->allocator = allocator;
    p->slots = malloc_check((size_t)p->num_slots * sizeof(PrefetchSlot), "prefetch slots");
    memset(p->slots, 0, (size_t)p->num_slots * sizeof(PrefetchSlot));
    const size_t image_bytes = mul_size_check(p->image_floats, sizeof(float), "batch");
    for (int i = 0; i < p->num_slots; i++) {
        PrefetchSlot *slot = &p->slots[i];
        slot->images = buffer_alloc(p, mul_size_check(B, image_bytes, "batch"), "batch images");
        slot->labels = buffer_alloc(p, (size_t)B * sizeof(int), "batch labels");
        slot->indices = malloc_check((size_t)B * sizeof(int), "batch indices");
        slot->augments = malloc_check((size_t)B * sizeof(ImageAugment), "batch augments");
        batch_augment_draws_alloc(&slot->ops, B);
        slot->labels2 = buffer_alloc(p, (size_t)B * sizeof(int), "batch mixed labels");
        slot->lam = buffer_alloc(p, (size_t)B * sizeof(float), "batch mix weights");
    }
    PTHREAD_CHECK(pthread_mutex_init(&p->lock, NULL));
    PTHREAD_CHECK(pthread_cond_init(&p->work_ready, NULL));
    PTHREAD_CHECK(pthread_cond_init(&p->batch_ready, NULL));
    p->threads = malloc_check((size_t)(workers > 0 ? workers : 1) * sizeof(pthread_t),
                              "prefetch threads");
    for (int i = 0; i < workers; i++) {
        PTHREAD_CHECK(pthread_create(&p->threads[i], NULL, worker_main, p));
        p->num_threads++;
    }
    return p;
}

void batch_prefetch_submit(BatchPrefetch *p, const int *indices, Rng *rng) {
    PTHREAD_CHECK(pthread_mutex_lock(&p->lock));
    if (p->submitted - p->taken >= p->depth) {
        fatal("batch_prefetch_submit: %d batches already queued (the depth)", p->depth);
    }
    PrefetchSlot *slot = &p->slots[p->submitted % p->num_slots];
    // the slot was taken at least one take ago, and its rendering is done: no worker holds it
    PTHREAD_CHECK(pthread_mutex_unlock(&p->lock));
    memcpy(slot->indices, indices, (size_t)p->B * sizeof(int));
    slot->rng_before = rng != NULL ? rng->state : 0;
    vision_draw_augment(slot->augments, p->split, p->B, rng);
    batch_augment_draw(&slot->ops, &p->augment, p->B, p->split->side, p->split->side, rng);
    slot->next_image = 0;
    slot->done_images = 0;
    slot->finished = 0;
    if (p->num_threads == 0) {
        render_range(p, slot, 0, p->B);
        finish_batch(p, slot);
        slot->next_image = slot->done_images = p->B;
        slot->finished = 1;
    }
    PTHREAD_CHECK(pthread_mutex_lock(&p->lock));
    p->submitted++;
    PTHREAD_CHECK(pthread_cond_broadcast(&p->work_ready));
    PTHREAD_CHECK(pthread_mutex_unlock(&p->lock));
}

void batch_prefetch_take(BatchPrefetch *p, const float **images, const int **labels) {
    PTHREAD_CHECK(pthread_mutex_lock(&p->lock));
    if (p->submitted == p->taken) fatal("batch_prefetch_take: no batch queued");
    PrefetchSlot *slot = &p->slots[p->taken % p->num_slots];
    while (!slot->finished) PTHREAD_CHECK(pthread_cond_wait(&p->batch_ready, &p->lock));
    p->taken++;
    PTHREAD_CHECK(pthread_mutex_unlock(&p->lock));
    *images = slot->images;
    *labels = slot->labels;
    p->last_taken = slot;
}

MixTargets batch_prefetch_taken_mix(const BatchPrefetch *p) {
    if (p->last_taken == NULL) fatal("batch_prefetch_taken_mix: no batch taken yet");
    return p->last_taken->mix;
}

void batch_prefetch_set_augment(BatchPrefetch *p, const BatchAugment *augment) {
    if (p->submitted != 0) fatal("batch_prefetch_set_augment: after the first submit");
    memset(&p->augment, 0, sizeof(p->augment));
    if (augment != NULL) p->augment = *augment;
}

int batch_prefetch_queued(const BatchPrefetch *p) {
    // read by the only thread that changes the counters
    return (int)(p->submitted - p->taken);
}

int batch_prefetch_pending_rng(const BatchPrefetch *p, uint64_t *state) {
    if (p->submitted == p->taken) return 0;
    *state = p->slots[p->taken % p->num_slots].rng_before;
    return 1;
}

void batch_prefetch_free(BatchPrefetch *p) {
    if (p == NULL) return;
    PTHREAD_CHECK(pthread_mutex_lock(&p->lock));
    p->stopping = 1;
    PTHREAD_CHECK(pthread_cond_broadcast(&p->work_ready));
    PTHREAD_CHECK(pthread_mutex_unlock(&p->lock));
    for (int i = 0; i < p->num_threads; i++) PTHREAD_CHECK(pthread_join(p->threads[i], NULL));
    PTHREAD_CHECK(pthread_cond_destroy(&p->batch_ready));
    PTHREAD_CHECK(pthread_cond_destroy(&p->work_ready));
    PTHREAD_CHECK(pthread_mutex_destroy(&p->lock));
    for (int i = 0; i < p->num_slots; i++) {
        buffer_free(p, p->slots[i].images);
        buffer_free(p, p->slots[i].labels);
        free(p->slots[i].indices);
        free(p->slots[i].augments);
        batch_augment_draws_free(&p->slots[i].ops);
        buffer_free(p, p->slots[i].labels2);
        buffer_free(p, p->slots[i].lam);
    }
    free(p->slots);
    free(p->threads);
    free(p);
}
