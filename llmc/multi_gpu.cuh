// Data parallel training over NCCL: one process per GPU (the gradient
// reduction itself, all-reduce or ZeRO-1, is llmc/grad_sync.cuh's); this
// file joins the ranks and reduces host scalars. Ranks come from -pn/-pr, else from mpirun's
// environment (OMPI_COMM_WORLD_*, PMI_*); the NCCL unique id travels through
// a shared file (-pf): rank 0 writes it atomically, the others wait for it,
// and rank 0 deletes it once every rank has joined. Built without NCCL
// (no nccl.h at build time) only one process is accepted.
#ifndef FOLDNORM_MULTI_GPU_CUH
#define FOLDNORM_MULTI_GPU_CUH

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_common.cuh"

extern "C" {
#include "atomic_write.h"
#include "utils.h"
}

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
    float *scalar; // device scratch for reducing host scalars (8 bytes: a double fits)
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

// pn, pr: -pn/-pr (pn = 0: from the environment, else 1 process); pf: -pf
static inline MultiGpu multi_gpu_init(int pn, int pr, const char *pf) {
    MultiGpu mg;
    memset(&mg, 0, sizeof(mg));
    mg.world = pn > 0 ? pn : env_int("OMPI_COMM_WORLD_SIZE", env_int("PMI_SIZE", 1));
    mg.rank = pn > 0 ? pr : env_int("OMPI_COMM_WORLD_RANK", env_int("PMI_RANK", 0));
    if (mg.world < 1 || mg.rank < 0 || mg.rank >= mg.world) {
        fatal("-pn %d -pr %d: the rank must be in [0, %d)", mg.world, mg.rank, mg.world);
    }
    int devices = 0;
    CUDA_CHECK(cudaGetDeviceCount(&devices));
    const int local = env_int("OMPI_COMM_WORLD_LOCAL_RANK", mg.rank);
    mg.device = local % devices;
    CUDA_CHECK(cudaSetDevice(mg.device));
    CUDA_CHECK(cudaMalloc(&mg.scalar, sizeof(double)));
    // the join below all-reduces it: a defined value, not cudaMalloc's garbage
    CUDA_CHECK(cudaMemset(mg.scalar, 0, sizeof(double)));
    if (mg.world == 1) return mg;
#ifdef FOLDNORM_NCCL
    if (pf == NULL) fatal("-pn %d: several processes need -pf, a file all ranks can reach", mg.world);
    ncclUniqueId id = exchange_unique_id(mg.rank, pf);
    NCCL_CHECK(ncclCommInitRank(&mg.comm, mg.world, id, mg.rank));
    // every rank has joined, so every rank has read the id
    CUDA_CHECK(cudaDeviceSynchronize());
    NCCL_CHECK(ncclAllReduce(mg.scalar, mg.scalar, 1, ncclFloat, ncclSum, mg.comm, 0));
    CUDA_CHECK(cudaDeviceSynchronize());
    if (mg.rank == 0 && unlink(pf) != 0) fatal("-pf %s: cannot remove the id file", pf);
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

// the mean of a host value over the ranks
static inline float multi_gpu_mean(MultiGpu *mg, float value) {
    if (mg->world == 1) return value;
    CUDA_CHECK(cudaMemcpy(mg->scalar, &value, sizeof(float), cudaMemcpyHostToDevice));
    multi_gpu_average(mg, mg->scalar, 1, 0);
    CUDA_CHECK(cudaMemcpy(&value, mg->scalar, sizeof(float), cudaMemcpyDeviceToHost));
    return value;
}

// the smallest of a host integer over the ranks (the 4-byte scalar read as an int)
static inline int multi_gpu_min_int(MultiGpu *mg, int value) {
    if (mg->world == 1) return value;
#ifdef FOLDNORM_NCCL
    int *x = (int *)mg->scalar;
    CUDA_CHECK(cudaMemcpy(x, &value, sizeof(int), cudaMemcpyHostToDevice));
    NCCL_CHECK(ncclAllReduce(x, x, 1, ncclInt32, ncclMin, mg->comm, 0));
    CUDA_CHECK(cudaMemcpy(&value, x, sizeof(int), cudaMemcpyDeviceToHost));
    return value;
#else
    return value;
#endif
}

static inline void multi_gpu_free(MultiGpu *mg) {
#ifdef FOLDNORM_NCCL
    if (mg->world > 1) NCCL_CHECK(ncclCommDestroy(mg->comm));
#endif
    CUDA_CHECK(cudaFree(mg->scalar));
}

#endif
