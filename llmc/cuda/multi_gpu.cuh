// Data parallel training over NCCL: one process per GPU (the gradient
// reduction itself, all-reduce or ZeRO-1, is llmc/cuda/grad_sync.cuh's); this
// file joins the ranks and reduces host scalars. The NCCL unique id reaches
// every rank one of two ways:
//   - -pf FILE, a file all ranks can reach: rank 0 writes it atomically, the
//     others wait for it, and rank 0 deletes it once every rank has joined;
//     ranks from -pn/-pr, else from the launcher's environment (mpirun's
//     OMPI_COMM_WORLD_*, PMI_*, Slurm's SLURM_PROCID/SLURM_NTASKS);
//   - no -pf, started by mpirun (or srun --mpi=pmix) and built with MPI
//     (FOLDNORM_MPI: mpi.h found at build time): MPI_Init, ranks from
//     MPI_COMM_WORLD, rank 0's id by MPI_Bcast (as llm.c does); MPI stays up
//     for the run and multi_gpu_free finalizes it.
// Built without NCCL (no nccl.h at build time) only one process is accepted.
#ifndef FOLDNORM_MULTI_GPU_CUH
#define FOLDNORM_MULTI_GPU_CUH

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_common.cuh"

extern "C" {
#include "core/atomic_write.h"
#include "core/utils.h"
}

#ifdef FOLDNORM_MPI
#include <mpi.h>
#endif
#ifdef FOLDNORM_NCCL
#include <nccl.h>
#define NCCL_CHECK(call) nccl_check_((call), #call, __FILE__, __LINE__)
static inline void nccl_check_(ncclResult_t r, const char *call, const char *file, int line) {
    if (r != ncclSuccess) {
        fprintf(stderr, "error: %s failed at %s:%d: NCCL %d (%s)\n", call, file, line, (int)r,
                ncclGetErrorString(r));
        exit(EXIT_FAILURE);
    }
}
#endif

typedef struct {
    int rank, world;
    int device;
    int mpi_active; // MPI_Init was called here (the id came by MPI_Bcast)
    void *scalar; // device scratch for reducing one host scalar (8 bytes: a double, a float or an int)
#ifdef FOLDNORM_NCCL
    ncclComm_t comm;
#endif
} MultiGpu;

// an integer environment variable, or fallback when unset
static inline int env_int(const char *name, int fallback) {
    const char *v = getenv(name);
    if (v == NULL || *v == '\0') return fallback;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end != '\0' || x < 0 || x > 1000000) fatal("environment %s='%s': expected a count", name, v);
    return (int)x;
}

#ifdef FOLDNORM_NCCL
static void write_unique_id(FILE *f, const char *path, const void *ctx) {
    fwrite_check(ctx, sizeof(ncclUniqueId), 1, f, path);
}

// rank 0 creates the id file; the others wait for it (up to 120 s)
static inline ncclUniqueId exchange_unique_id(int rank, const char *path) {
    ncclUniqueId id;
    if (rank == 0) {
        if (access(path, F_OK) == 0) {
            fatal("-pf %s: the file exists (a stale id from an earlier run?): remove it first", path);
        }
        NCCL_CHECK(ncclGetUniqueId(&id));
        write_file_atomic(path, write_unique_id, &id);
        return id;
    }
    const double t0 = now_seconds();
    for (;;) {
        FILE *f = fopen(path, "rb");
        if (f != NULL) {
            long bytes = file_size_bytes(f, path);
            if (bytes != (long)sizeof(ncclUniqueId)) {
                fatal("-pf %s: %ld bytes, expected an NCCL unique id of %zu", path, bytes,
                      sizeof(ncclUniqueId));
            }
            fread_check(&id, sizeof(id), 1, f, path, "the NCCL unique id");
            fclose(f);
            return id;
        }
        if (now_seconds() - t0 > 120.0) {
            fatal("-pf %s: rank %d waited 120 s for rank 0 to write the NCCL id", path, rank);
        }
        usleep(20000);
    }
}
#endif

#ifdef FOLDNORM_MPI
#define MPI_CHECK(call) mpi_check_((call), #call, __FILE__, __LINE__)
static inline void mpi_check_(int rc, const char *call, const char *file, int line) {
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "error: %s failed at %s:%d: %s\n", call, file, line, msg);
        exit(EXIT_FAILURE);
    }
}

// started by an MPI launcher (as llmc/core/comm.c asks)?
static inline int launched_by_mpi(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") != NULL || getenv("PMI_SIZE") != NULL ||
           getenv("PMIX_RANK") != NULL;
}

#ifdef FOLDNORM_NCCL
// rank 0's NCCL unique id on every rank
static inline ncclUniqueId broadcast_unique_id(int rank) {
    ncclUniqueId id;
    memset(&id, 0, sizeof(id));
    if (rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_CHECK(MPI_Bcast(&id, (int)sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD));
    return id;
}
#endif
#endif

// pn, pr: -pn/-pr (pn = 0: from the environment, else 1 process); pf: -pf
static inline MultiGpu multi_gpu_init(int pn, int pr, const char *pf) {
    MultiGpu mg;
    memset(&mg, 0, sizeof(mg));
#ifdef FOLDNORM_MPI
    if (pn == 0 && pf == NULL && launched_by_mpi()) {
        MPI_CHECK(MPI_Init(NULL, NULL));
        MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &mg.world));
        MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &mg.rank));
        mg.mpi_active = 1;
    }
#endif
    if (!mg.mpi_active) {
        mg.world = pn > 0 ? pn : env_int("OMPI_COMM_WORLD_SIZE", env_int("PMI_SIZE", env_int("SLURM_NTASKS", 1)));
        mg.rank = pn > 0 ? pr : env_int("OMPI_COMM_WORLD_RANK", env_int("PMI_RANK", env_int("SLURM_PROCID", 0)));
    }
    if (mg.world < 1 || mg.rank < 0 || mg.rank >= mg.world) {
        fatal("-pn %d -pr %d: the rank must be in [0, %d)", mg.world, mg.rank, mg.world);
    }
    int devices = 0;
    CUDA_CHECK(cudaGetDeviceCount(&devices));
    // the rank on this node picks the GPU (mpirun's, else Slurm's, else the rank)
    const int local = env_int("OMPI_COMM_WORLD_LOCAL_RANK", env_int("SLURM_LOCALID", mg.rank));
    mg.device = local % devices;
    CUDA_CHECK(cudaSetDevice(mg.device));
    CUDA_CHECK(cudaMalloc(&mg.scalar, sizeof(double)));
    // the join below all-reduces it: a defined value, not cudaMalloc's garbage
    CUDA_CHECK(cudaMemset(mg.scalar, 0, sizeof(double)));
    if (mg.world == 1) return mg;
#ifdef FOLDNORM_NCCL
    ncclUniqueId id;
#ifdef FOLDNORM_MPI
    if (mg.mpi_active) {
        id = broadcast_unique_id(mg.rank);
    } else
#endif
    {
        if (pf == NULL) {
            fatal("%d processes need -pf, a file all ranks can reach%s", mg.world,
#ifdef FOLDNORM_MPI
                  " (or mpirun / srun --mpi=pmix without -pf: the id by MPI_Bcast)"
#else
                  " (this build has no MPI to send the id: mpi.h was not found at build time)"
#endif
            );
        }
        id = exchange_unique_id(mg.rank, pf);
    }
    NCCL_CHECK(ncclCommInitRank(&mg.comm, mg.world, id, mg.rank));
    // every rank has joined, so every rank has read the id
    CUDA_CHECK(cudaDeviceSynchronize());
    NCCL_CHECK(ncclAllReduce(mg.scalar, mg.scalar, 1, ncclFloat, ncclSum, mg.comm, 0));
    CUDA_CHECK(cudaDeviceSynchronize());
    if (pf != NULL && mg.rank == 0 && unlink(pf) != 0) fatal("-pf %s: cannot remove the id file", pf);
    if (mg.rank == 0) {
        printf("multi-GPU: %d processes joined, the NCCL id %s\n", mg.world,
               mg.mpi_active ? "sent by MPI_Bcast (mpirun)" : "read from the -pf file");
    }
#else
    (void)pf;
    fatal("%d processes: this build has no NCCL (nccl.h was not found at build time)", mg.world);
#endif
    return mg;
}

// x (n floats on the device) = its mean over the ranks (host scalars)
static inline void multi_gpu_average(MultiGpu *mg, float *x, size_t n, cudaStream_t stream) {
    if (mg->world == 1) return;
#ifdef FOLDNORM_NCCL
    NCCL_CHECK(ncclAllReduce(x, x, n, ncclFloat, ncclAvg, mg->comm, stream));
#else
    (void)x, (void)n, (void)stream;
#endif
}

// One host scalar of NCCL type `type` (bytes wide) reduced with op over the
// ranks, through the device scratch.
static inline void multi_gpu_reduce_scalar(MultiGpu *mg, void *value, size_t bytes, int type, int op) {
    if (mg->world == 1) return;
#ifdef FOLDNORM_NCCL
    CUDA_CHECK(cudaMemcpy(mg->scalar, value, bytes, cudaMemcpyHostToDevice));
    NCCL_CHECK(ncclAllReduce(mg->scalar, mg->scalar, 1, (ncclDataType_t)type, (ncclRedOp_t)op,
                             mg->comm, 0));
    CUDA_CHECK(cudaMemcpy(value, mg->scalar, bytes, cudaMemcpyDeviceToHost));
#else
    (void)value, (void)bytes, (void)type, (void)op;
#endif
}

#ifdef FOLDNORM_NCCL
#define MULTI_GPU_NCCL(nccl_name) nccl_name
#else
#define MULTI_GPU_NCCL(nccl_name) 0
#endif

// the mean of a host value over the ranks
static inline float multi_gpu_mean(MultiGpu *mg, float value) {
    multi_gpu_reduce_scalar(mg, &value, sizeof(value), MULTI_GPU_NCCL(ncclFloat), MULTI_GPU_NCCL(ncclAvg));
    return value;
}

// the sum of a host double over the ranks (counts and loss sums stay exact)
static inline double multi_gpu_sum_double(MultiGpu *mg, double value) {
    multi_gpu_reduce_scalar(mg, &value, sizeof(value), MULTI_GPU_NCCL(ncclDouble), MULTI_GPU_NCCL(ncclSum));
    return value;
}

// the largest of a host integer over the ranks
static inline int multi_gpu_max_int(MultiGpu *mg, int value) {
    multi_gpu_reduce_scalar(mg, &value, sizeof(value), MULTI_GPU_NCCL(ncclInt32), MULTI_GPU_NCCL(ncclMax));
    return value;
}

static inline void multi_gpu_free(MultiGpu *mg) {
#ifdef FOLDNORM_NCCL
    if (mg->world > 1) NCCL_CHECK(ncclCommDestroy(mg->comm));
#endif
    CUDA_CHECK(cudaFree(mg->scalar));
#ifdef FOLDNORM_MPI
    if (mg->mpi_active) {
        MPI_CHECK(MPI_Finalize());
        mg->mpi_active = 0;
    }
#endif
}

#endif
