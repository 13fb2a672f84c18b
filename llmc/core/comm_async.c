// The overlapped gradient reduction (comm_async.h).
#include "comm_async.h"

#include <stdlib.h>

#ifdef FOLDNORM_MPI
#include <pthread.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "comm_mpi.h"
#include "comm_watchdog.h"
#include "utils.h"

// How long the thread sleeps between MPI_Testall calls: each call moves the
// transfers on (Open MPI has no progress of its own for these); short enough
// to keep a 10 Gbit/s link busy, long enough to leave the cores to the backward.
#define POLL_NS 100000L
// MPI counts are int: longer ranges go as several collectives
#define MAX_COUNT ((size_t)1 << 26)

typedef struct {
    size_t lo, hi;
} Range;

typedef struct {
    MPI_Request request;
    int *counts; // the reduce-scatter's per-rank counts (NULL for an all-reduce)
} Pending;

struct CommAsync {
    const Comm *comm;
    float *data;
    size_t n;
    int sharded;
    size_t shard_lo, shard_hi;
    float *shard; // ZeRO-1: this rank's reduced shard, copied into data by finish
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    // guarded by mu: the step's ranges (posted by the caller, taken by the thread)
    Range *ranges;
    size_t num_ranges, cap_ranges, taken;
    int finishing, idle, quit;
    // the thread's own
    Pending *pending;
    size_t num_pending, cap_pending;
};

static void *grow(void *p, size_t *cap, size_t need, size_t item, const char *what) {
    if (need <= *cap) {
        return p;
    }
    size_t cap2 = *cap > 0 ? *cap * 2 : 64;
    cap2 = cap2 < need ? need : cap2;
    void *q = realloc(p, mul_size_check(cap2, item, what));
    if (q == NULL) {
        fatal("out of memory for %s", what);
    }
    *cap = cap2;
    return q;
}

// Starts the collectives of data[lo, hi) (the thread, holding no lock).
static void start_range(CommAsync *a, size_t lo, size_t hi) {
    const int W = a->comm->world_size;
    for (size_t c = lo; c < hi; c += MAX_COUNT) {
        size_t end = hi - c < MAX_COUNT ? hi : c + MAX_COUNT;
        a->pending = grow(a->pending, &a->cap_pending, a->num_pending + 1, sizeof(Pending),
                          "pending reductions");
        Pending *p = &a->pending[a->num_pending++];
        p->counts = NULL;
        if (!a->sharded) {
            comm_mpi_check(MPI_Iallreduce(MPI_IN_PLACE, a->data + c, (int)(end - c), MPI_FLOAT,
                                          MPI_SUM, MPI_COMM_WORLD, &p->request),
                           "MPI_Iallreduce");
            continue;
        }
        // rank r receives the part of [c, end) inside its shard
        p->counts = malloc_check((size_t)W * sizeof(int), "reduce-scatter counts");
        for (int r = 0; r < W; r++) {
            size_t slo, shi;
            comm_shard_range(a->comm, a->n, r, &slo, &shi);
            size_t from = slo > c ? slo : c, to = shi < end ? shi : end;
            p->counts[r] = to > from ? (int)(to - from) : 0;
        }
        size_t mine = c > a->shard_lo ? c - a->shard_lo : 0;
        if (mine > a->shard_hi - a->shard_lo) {
            mine = a->shard_hi - a->shard_lo; // this rank receives nothing of this range
        }
        comm_mpi_check(MPI_Ireduce_scatter(a->data + c, a->shard + mine, p->counts, MPI_FLOAT,
                                           MPI_SUM, MPI_COMM_WORLD, &p->request),
                       "MPI_Ireduce_scatter");
    }
}

// Moves the pending collectives on once; drops the finished ones.
static void progress(CommAsync *a) {
    size_t kept = 0;
    for (size_t i = 0; i < a->num_pending; i++) {
        int done = 0;
        comm_mpi_check(MPI_Test(&a->pending[i].request, &done, MPI_STATUS_IGNORE), "MPI_Test");
        if (done) {
            free(a->pending[i].counts);
        } else {
            a->pending[kept++] = a->pending[i];
        }
    }
    a->num_pending = kept;
}

static void *reduce_loop(void *arg) {
    CommAsync *a = arg;
    const struct timespec poll = {0, POLL_NS};
    pthread_mutex_lock(&a->mu);
    for (;;) {
        while (a->taken < a->num_ranges) {
            Range r = a->ranges[a->taken++];
            pthread_mutex_unlock(&a->mu);
            start_range(a, r.lo, r.hi);
            pthread_mutex_lock(&a->mu);
        }
        if (a->num_pending > 0) {
            pthread_mutex_unlock(&a->mu);
            progress(a);
            if (a->num_pending > 0) {
                nanosleep(&poll, NULL);
            }
            pthread_mutex_lock(&a->mu);
            continue;
        }
        // nothing in flight: tell a waiting finish, then sleep until a post
        if (a->finishing && a->taken == a->num_ranges) {
            a->idle = 1;
            pthread_cond_broadcast(&a->cv);
        }
        if (a->quit) {
            break;
        }
        pthread_cond_wait(&a->cv, &a->mu);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

CommAsync *comm_async_new(const Comm *comm, float *data, size_t n, int sharded) {
    if (comm->world_size == 1 || !comm->threads_ok) {
        return NULL;
    }
    CommAsync *a = calloc_check(1, sizeof(CommAsync), "overlapped reduction");
    a->comm = comm;
    a->data = data;
    a->n = n;
    a->sharded = sharded;
    if (sharded) {
        comm_shard_range(comm, n, comm->rank, &a->shard_lo, &a->shard_hi);
        a->shard = malloc_check((a->shard_hi - a->shard_lo + 1) * sizeof(float), "reduced shard");
    }
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    int rc = pthread_create(&a->thread, NULL, reduce_loop, a);
    if (rc != 0) {
        fatal("cannot start the gradient reduction thread: %s", strerror(rc));
    }
    return a;
}

void comm_async_post(CommAsync *a, size_t lo, size_t hi) {
    if (lo >= hi) {
        return;
    }
    pthread_mutex_lock(&a->mu);
    a->ranges = grow(a->ranges, &a->cap_ranges, a->num_ranges + 1, sizeof(Range), "ranges");
    a->ranges[a->num_ranges++] = (Range){lo, hi};
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

// The step's ranges tile [0, n) exactly (sorted copies, each range once).
static int cmp_range(const void *x, const void *y) {
    const Range *p = x, *q = y;
    return (p->lo > q->lo) - (p->lo < q->lo);
}
static void check_cover(const CommAsync *a) {
    Range *sorted = malloc_check((a->num_ranges + 1) * sizeof(Range), "ranges");
    memcpy(sorted, a->ranges, a->num_ranges * sizeof(Range));
    qsort(sorted, a->num_ranges, sizeof(Range), cmp_range);
    size_t next = 0;
    for (size_t i = 0; i < a->num_ranges && next != (size_t)-1; i++) {
        next = sorted[i].lo == next ? sorted[i].hi : (size_t)-1;
    }
    free(sorted);
    if (next != a->n) {
        fatal("overlapped gradient reduction: the %zu ranges posted this step do not cover the "
              "%zu gradients once",
              a->num_ranges, a->n);
    }
}

void comm_async_finish(CommAsync *a) {
    comm_watchdog_enter(a->sharded ? "MPI_Ireduce_scatter (overlapped gradient reduction)"
                                   : "MPI_Iallreduce (overlapped gradient reduction)",
                        a->n);
    pthread_mutex_lock(&a->mu);
    a->finishing = 1;
    pthread_cond_broadcast(&a->cv);
    while (!a->idle) {
        pthread_cond_wait(&a->cv, &a->mu);
    }
    check_cover(a);
    a->finishing = 0;
    a->idle = 0;
    a->num_ranges = 0;
    a->taken = 0;
    pthread_mutex_unlock(&a->mu);
    comm_watchdog_leave();
    const float inv = 1.0f / (float)a->comm->world_size;
    float *mean = a->data;
    size_t lo = 0, hi = a->n;
    if (a->sharded) {
        lo = a->shard_lo;
        hi = a->shard_hi;
        memcpy(a->data + lo, a->shard, (hi - lo) * sizeof(float));
    }
#pragma omp parallel for schedule(static)
    for (size_t i = lo; i < hi; i++) {
        mean[i] *= inv;
    }
}

void comm_async_free(CommAsync *a) {
    if (a == NULL) {
        return;
    }
    pthread_mutex_lock(&a->mu);
    a->quit = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->thread, NULL);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    free(a->ranges);
    free(a->pending);
    free(a->shard);
    free(a);
}

#else

CommAsync *comm_async_new(const Comm *comm, float *data, size_t n, int sharded) {
    (void)comm;
    (void)data;
    (void)n;
    (void)sharded;
    return NULL;
}

// never reached: without MPI there is no CommAsync
void comm_async_post(CommAsync *a, size_t lo, size_t hi) {
    (void)a;
    (void)lo;
    (void)hi;
}

void comm_async_finish(CommAsync *a) {
    (void)a;
}

void comm_async_free(CommAsync *a) {
    (void)a;
}

#endif
