// Data-parallel communication: one small interface, two backends. Built with
// FOLDNORM_MPI (mk/mpi.mk, Debian's Open MPI) it uses MPI across processes
// started by mpirun; without it, or when not started by mpirun, it is a
// single process (rank 0 of 1) and every call is a no-op. The CUDA trainer's
// NCCL path mirrors these calls.
#ifndef FOLDNORM_COMM_H
#define FOLDNORM_COMM_H

#include <stddef.h>

typedef struct {
    int rank;
    int world_size;
    int mpi_active; // MPI_Init was called by comm_init
    int threads_ok; // MPI may be called from another thread (MPI_THREAD_SERIALIZED)
} Comm;

// Under mpirun with several ranks it also starts the collectives' deadline
// (comm_watchdog.h: FOLDNORM_COMM_TIMEOUT seconds, default 900, 0 = off).
void comm_init(Comm *comm, int *argc, char ***argv);
// In place: data[i] = mean over ranks of data[i] (chunked under INT_MAX).
void comm_allreduce_mean(const Comm *comm, float *data, size_t n);
// In place: *value = mean over ranks.
void comm_mean_double(const Comm *comm, double *value);
// In place: *value = sum over ranks.
void comm_sum_double(const Comm *comm, double *value);
// The largest of the ranks' values (every rank gets it): e.g. whether any
// rank received a stop signal, so all stop after the same step.
int comm_max_int(const Comm *comm, int value);
// Rank 0's value, on every rank.
int comm_bcast_int(const Comm *comm, int value);

// ZeRO-1 style sharded update: the n values as one chunk of zero_layout.h
// (ZERO_SPREAD: world_size contiguous shards whose sizes differ by at most
// one); rank r owns [*lo, *hi).
void comm_shard_range(const Comm *comm, size_t n, int rank, size_t *lo, size_t *hi);
// Reduce-scatter: afterwards this rank's shard of data holds the mean over
// ranks; the rest of data is left as scratch (overwritten by the gather).
void comm_reduce_scatter_mean(const Comm *comm, float *data, size_t n);
// All-gather: every rank's shard of data is copied to every rank.
void comm_allgather_shards(const Comm *comm, float *data, size_t n);
void comm_barrier(const Comm *comm);
void comm_finalize(Comm *comm);
// "mpi" or "none".
const char *comm_backend_name(void);

#endif
