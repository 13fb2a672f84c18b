#include "comm.h"

#include <stdlib.h>

#include "utils.h"
#include "zero_layout.h"

void comm_shard_range(const Comm *comm, size_t n, int rank, size_t *lo, size_t *hi) {
    const ZeroSlice s = zero_slice(0, n, rank, comm->world_size, ZERO_SPREAD);
    *lo = s.offset;
    *hi = s.offset + s.count;
}

#ifdef FOLDNORM_MPI
#include <limits.h>
#include <string.h>

#include <mpi.h>

#include "comm_mpi.h"
#include "comm_watchdog.h"

#define mpi_check comm_mpi_check

// Every MPI call goes through this: errors return (MPI_ERRORS_RETURN) and
// are reported with the call that failed.
void comm_mpi_check(int rc, const char *call) {
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        fatal("%s failed: %s", call, msg);
    }
}

// Started by mpirun (Open MPI or another launcher that sets these)?
static int launched_by_mpirun(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") != NULL || getenv("PMI_SIZE") != NULL ||
           getenv("PMIX_RANK") != NULL;
}

const char *comm_backend_name(void) {
    return "mpi";
}

void comm_init(Comm *comm, int *argc, char ***argv) {
    comm->rank = 0;
    comm->world_size = 1;
    comm->mpi_active = 0;
    comm->threads_ok = 0;
    if (!launched_by_mpirun()) {
        return;
    }
    // serialized: the overlapped gradient reduction (comm_async.h) calls MPI
    // from a thread of its own while the main thread computes
    int provided = MPI_THREAD_SINGLE;
    mpi_check(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    comm->threads_ok = provided >= MPI_THREAD_SERIALIZED;
    mpi_check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, &comm->rank), "MPI_Comm_rank");
    mpi_check(MPI_Comm_size(MPI_COMM_WORLD, &comm->world_size), "MPI_Comm_size");
    comm->mpi_active = 1;
    if (comm->world_size > 1) {
        comm_watchdog_start(comm->rank, host_name(), comm_watchdog_timeout_s());
    }
}

// A blocking collective under the watchdog's deadline (comm_watchdog.h).
#define WATCHED(what, count, call)                                                             \
    do {                                                                                       \
        comm_watchdog_enter(what, count);                                                      \
        mpi_check(call, what);                                                                 \
        comm_watchdog_leave();                                                                 \
    } while (0)

void comm_allreduce_mean(const Comm *comm, float *data, size_t n) {
    if (comm->world_size == 1) {
        return;
    }
    const size_t chunk = (size_t)1 << 26; // 64M floats a call: counts are int
    for (size_t i = 0; i < n; i += chunk) {
        int count = (int)(n - i < chunk ? n - i : chunk);
        WATCHED("MPI_Allreduce", (size_t)count,
                MPI_Allreduce(MPI_IN_PLACE, data + i, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    }
    const float inv = 1.0f / (float)comm->world_size;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        data[i] *= inv;
    }
}

void comm_mean_double(const Comm *comm, double *value) {
    if (comm->world_size == 1) {
        return;
    }
    WATCHED("MPI_Allreduce", 1, MPI_Allreduce(MPI_IN_PLACE, value, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    *value /= comm->world_size;
}

void comm_sum_double(const Comm *comm, double *value) {
    if (comm->world_size == 1) {
        return;
    }
    WATCHED("MPI_Allreduce", 1, MPI_Allreduce(MPI_IN_PLACE, value, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
}

int comm_max_int(const Comm *comm, int value) {
    if (comm->world_size == 1) {
        return value;
    }
    WATCHED("MPI_Allreduce", 1, MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    return value;
}

int comm_bcast_int(const Comm *comm, int value) {
    if (comm->world_size == 1) {
        return value;
    }
    WATCHED("MPI_Bcast", 1, MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD));
    return value;
}

// MPI counts and displacements are int: the shards of an n-value vector.
static void shard_counts(const Comm *comm, size_t n, int *counts, int *displs) {
    if (n > (size_t)INT_MAX) {
        fatal("sharded update of %zu values: MPI displacements are int (at most %d); "
              "use -z 0", n, INT_MAX);
    }
    for (int r = 0; r < comm->world_size; r++) {
        size_t lo, hi;
        comm_shard_range(comm, n, r, &lo, &hi);
        counts[r] = (int)(hi - lo);
        displs[r] = (int)lo;
    }
}

void comm_reduce_scatter_mean(const Comm *comm, float *data, size_t n) {
    if (comm->world_size == 1) {
        return;
    }
    int *counts = malloc_check(2 * (size_t)comm->world_size * sizeof(int), "shard counts");
    int *displs = counts + comm->world_size;
    shard_counts(comm, n, counts, displs);
    // in place, MPI leaves this rank's reduced shard at the start of data
    WATCHED("MPI_Reduce_scatter", n,
            MPI_Reduce_scatter(MPI_IN_PLACE, data, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    size_t count = (size_t)counts[comm->rank], lo = (size_t)displs[comm->rank];
    free(counts);
    if (lo != 0) {
        memmove(data + lo, data, count * sizeof(float));
    }
    const float inv = 1.0f / (float)comm->world_size;
#pragma omp parallel for schedule(static)
    for (size_t i = lo; i < lo + count; i++) {
        data[i] *= inv;
    }
}

void comm_allgather_shards(const Comm *comm, float *data, size_t n) {
    if (comm->world_size == 1) {
        return;
    }
    int *counts = malloc_check(2 * (size_t)comm->world_size * sizeof(int), "shard counts");
    int *displs = counts + comm->world_size;
    shard_counts(comm, n, counts, displs);
    WATCHED("MPI_Allgatherv", n,
            MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, counts, displs, MPI_FLOAT,
                           MPI_COMM_WORLD));
    free(counts);
}

void comm_barrier(const Comm *comm) {
    if (comm->world_size > 1) {
        WATCHED("MPI_Barrier", 0, MPI_Barrier(MPI_COMM_WORLD));
    }
}

void comm_finalize(Comm *comm) {
    if (comm->mpi_active) {
        WATCHED("MPI_Finalize", 0, MPI_Finalize()); // waits for every rank
        comm->mpi_active = 0;
    }
}

#else

const char *comm_backend_name(void) {
    return "none";
}

void comm_init(Comm *comm, int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    comm->rank = 0;
    comm->world_size = 1;
    comm->mpi_active = 0;
    comm->threads_ok = 0;
    if (getenv("OMPI_COMM_WORLD_SIZE") != NULL && atoi(getenv("OMPI_COMM_WORLD_SIZE")) > 1) {
        fatal("started by mpirun with %s ranks, but this build has no MPI (install "
              "libopenmpi-dev and rebuild)", getenv("OMPI_COMM_WORLD_SIZE"));
    }
}

void comm_allreduce_mean(const Comm *comm, float *data, size_t n) {
    (void)comm;
    (void)data;
    (void)n;
}

void comm_mean_double(const Comm *comm, double *value) {
    (void)comm;
    (void)value;
}

void comm_sum_double(const Comm *comm, double *value) {
    (void)comm;
    (void)value;
}

int comm_max_int(const Comm *comm, int value) {
    (void)comm;
    return value;
}

int comm_bcast_int(const Comm *comm, int value) {
    (void)comm;
    return value;
}

void comm_reduce_scatter_mean(const Comm *comm, float *data, size_t n) {
    (void)comm;
    (void)data;
    (void)n;
}

void comm_allgather_shards(const Comm *comm, float *data, size_t n) {
    (void)comm;
    (void)data;
    (void)n;
}

void comm_barrier(const Comm *comm) {
    (void)comm;
}

void comm_finalize(Comm *comm) {
    (void)comm;
}

#endif
