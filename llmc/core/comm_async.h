// The gradient reduction overlapped with the backward, on the CPU: the
// backward hands over ranges of the gradient vector as they become final
// (a layer's slices of each tensor), a thread of its own reduces each with a
// non-blocking collective (MPI_Iallreduce, or under ZeRO-1 MPI_Ireduce_scatter
// onto the ranks' shards, comm_shard_range) and drives them with MPI_Testall
// while the caller computes; comm_async_finish waits and leaves the vector as
// comm_allreduce_mean or comm_reduce_scatter_mean would. Each value is the
// same sum over the ranks, so with 2 ranks (one addition, commutative) the
// result is bit-identical to the one reduction after the backward; with more,
// Open MPI's summation order depends on the message and its split, so the
// results agree to rounding only (docs/performance.md, "Across hosts").
// MPI calls come from the thread only between the first post and the end of
// finish: the caller makes none there (MPI_THREAD_SERIALIZED).
#ifndef FOLDNORM_COMM_ASYNC_H
#define FOLDNORM_COMM_ASYNC_H

#include <stddef.h>

#include "comm.h"

typedef struct CommAsync CommAsync;

// The reduction of data (n floats) over comm's ranks; sharded: ZeRO-1 (this
// rank gets its shard's mean), else every rank gets the mean of all. NULL
// where it cannot overlap: one rank, no MPI, or MPI without thread support
// (the caller reduces after the backward instead).
CommAsync *comm_async_new(const Comm *comm, float *data, size_t n, int sharded);
// data[lo, hi) is final on this rank: reduce it. Every rank posts the same
// ranges in the same order; over one step they cover [0, n) once.
void comm_async_post(CommAsync *a, size_t lo, size_t hi);
// Waits for every posted range (the waiting, not the overlapped part, is
// under the watchdog's deadline), then scales by 1 / ranks: data (or this
// rank's shard of it) holds the mean. Dies unless the step's ranges covered
// [0, n) exactly. Ready for the next step afterwards.
void comm_async_finish(CommAsync *a);
void comm_async_free(CommAsync *a);

#endif
