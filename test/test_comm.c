// llmc/core/comm: under mpirun every rank fills a buffer with values that depend
// on its rank; after comm_allreduce_mean each element must equal the mean
// over ranks computed here in closed form. A buffer longer than one chunk
// would need 256 MiB, so the chunking is exercised by the count arithmetic
// only; sizes 1, odd and large-ish cover the rest. The overlapped reduction
// (comm_async.h) of random values posted as uneven ranges, out of order,
// equals the one-call reduction: bit for bit on 2 ranks (one addition per
// value), to rounding on more. -st S: rank 1 waits S seconds before the last
// barrier (the watchdog's check, comm_watchdog.h).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cli.h"
#include "core/comm.h"
#include "core/comm_async.h"
#include "core/rand.h"
#include "core/utils.h"
#include "test_helpers.h"

// ranges [k^2 * 37, (k+1)^2 * 37) of n posted from the end down, as a
// backward posts its layers; returns the largest |async - blocking| / (|blocking| + 1)
static double check_async(const Comm *comm, size_t n, int sharded, int *identical) {
    float *x = malloc_check(n * sizeof(float), "buffer");
    float *y = malloc_check(n * sizeof(float), "buffer");
    Rng rng;
    rng_seed(&rng, 1234 + (unsigned long long)comm->rank);
    rng_normal_fill(&rng, x, n, 0.0f, 1.0f);
    memcpy(y, x, n * sizeof(float));
    CommAsync *a = comm_async_new(comm, x, n, sharded);
    size_t lo = 0, hi = n;
    if (sharded) {
        comm_shard_range(comm, n, comm->rank, &lo, &hi);
        comm_reduce_scatter_mean(comm, y, n);
    } else {
        comm_allreduce_mean(comm, y, n);
    }
    for (int step = 0; step < 2; step++) { // twice: the second step reuses the thread
        if (step == 1) {
            rng_seed(&rng, 1234 + (unsigned long long)comm->rank);
            rng_normal_fill(&rng, x, n, 0.0f, 1.0f);
        }
        size_t k = 0;
        while ((k + 1) * (k + 1) * 37 < n) k++;
        for (size_t end = n;; k--) {
            size_t start = k * k * 37;
            comm_async_post(a, start, end);
            end = start;
            if (k == 0) break;
        }
        comm_async_finish(a);
    }
    comm_async_free(a);
    double worst = 0.0;
    *identical = memcmp(x + lo, y + lo, (hi - lo) * sizeof(float)) == 0;
    for (size_t i = lo; i < hi; i++) {
        double d = fabs((double)x[i] - y[i]) / (fabs(y[i]) + 1.0); // values ~N(0, 1)
        worst = worst_of(worst, d);
    }
    free(x);
    free(y);
    return worst;
}

int main(int argc, char **argv) {
    int stall_s = 0;
    CliFlag flags[] = {{"-st", CLI_INT, &stall_s, 0, 3600,
                        "rank 1 waits this many seconds before the last barrier (default 0)",
                        NULL, 0, 0}};
    CliSpec spec = {.program = "test_comm", .synopsis = "",
                    .about = "Run under mpirun -n N: comm_allreduce_mean against the closed-form mean.\n",
                    .flags = flags, .num_flags = CLI_COUNT(flags)};
    cli_parse(&spec, argc, argv, NULL);
    Comm comm;
    comm_init(&comm, &argc, &argv);
    const size_t sizes[] = {1, 1001, 3 * 1000 * 1000};
    int ok = 1;
    for (int s = 0; s < 3; s++) {
        size_t n = sizes[s];
        float *x = malloc_check(n * sizeof(float), "buffer");
        for (size_t i = 0; i < n; i++) {
            x[i] = (float)(comm.rank + 1) * (float)(i % 97) + (float)comm.rank;
        }
        comm_allreduce_mean(&comm, x, n);
        // mean over r of (r+1)*k + r = k*(W+1)/2 + (W-1)/2
        double W = comm.world_size, worst = 0.0;
        for (size_t i = 0; i < n; i++) {
            double expect = (double)(i % 97) * (W + 1) / 2 + (W - 1) / 2;
            double err = fabs(x[i] - expect) / (fabs(expect) + 1.0);
            worst = worst_of(worst, err);
        }
        if (!(worst <= 1e-6)) {
            ok = 0;
        }
        free(x);
        if (comm.rank == 0) {
            printf("allreduce of %zu floats over %d ranks: max rel err %.2e %s\n", n,
                   comm.world_size, worst, worst <= 1e-6 ? "ok" : "FAIL");
        }
    }
    // reduce-scatter then all-gather (the ZeRO-1 step) equals the all-reduce
    // mean; sizes below, equal to and above the world size, and uneven shards
    const size_t shard_sizes[] = {1, 3, 4, 1001, 3 * 1000 * 1000 + 1};
    for (int s = 0; s < 5; s++) {
        size_t n = shard_sizes[s], lo, hi, covered = 0;
        for (int r = 0; r < comm.world_size; r++) {
            comm_shard_range(&comm, n, r, &lo, &hi);
            covered += hi - lo;
        }
        float *x = malloc_check(n * sizeof(float), "buffer");
        for (size_t i = 0; i < n; i++) {
            x[i] = (float)(comm.rank + 1) * (float)(i % 89) - (float)comm.rank;
        }
        comm_reduce_scatter_mean(&comm, x, n);
        comm_shard_range(&comm, n, comm.rank, &lo, &hi);
        // mean over r of (r+1)*k - r = k*(W+1)/2 - (W-1)/2, checked on this
        // rank's shard after the reduce-scatter and everywhere after the gather
        double W = comm.world_size, worst_shard = 0.0, worst = 0.0;
        for (size_t i = lo; i < hi; i++) {
            double expect = (double)(i % 89) * (W + 1) / 2 - (W - 1) / 2;
            double err = fabs(x[i] - expect) / (fabs(expect) + 1.0);
            worst_shard = worst_of(worst_shard, err);
        }
        comm_allgather_shards(&comm, x, n);
        for (size_t i = 0; i < n; i++) {
            double expect = (double)(i % 89) * (W + 1) / 2 - (W - 1) / 2;
            double err = fabs(x[i] - expect) / (fabs(expect) + 1.0);
            worst = worst_of(worst, err);
        }
        double worst_all = worst_of(worst, worst_shard);
        comm_sum_double(&comm, &worst_all); // any rank's error fails every rank
        int this_ok = covered == n && worst_all <= 1e-6 * W;
        ok = ok && this_ok;
        free(x);
        if (comm.rank == 0) {
            printf("reduce-scatter + all-gather of %zu floats over %d ranks: max rel err %.2e %s\n",
                   n, comm.world_size, worst_all, this_ok ? "ok" : "FAIL");
        }
    }
    if (comm.world_size > 1 && comm.threads_ok) {
        for (int sharded = 0; sharded < 2; sharded++) {
            int identical;
            double worst = check_async(&comm, 1000003, sharded, &identical);
            double worst_all = worst;
            comm_sum_double(&comm, &worst_all);
            double all_identical = identical;
            comm_sum_double(&comm, &all_identical);
            int this_ok = comm.world_size == 2 ? all_identical == comm.world_size
                                               : worst_all <= 1e-6 * comm.world_size;
            ok = ok && this_ok;
            if (comm.rank == 0) {
                printf("overlapped %s of 1000003 floats over %d ranks: %s, max rel diff %.2e %s\n",
                       sharded ? "reduce-scatter" : "all-reduce", comm.world_size,
                       all_identical == comm.world_size ? "bit-identical" : "not bit-identical",
                       worst_all, this_ok ? "ok" : "FAIL");
            }
        }
    } else if (comm.rank == 0) {
        printf("overlapped reduction: %s\n", comm.world_size > 1 ? "no MPI thread support, skipped"
                                                                 : "one rank, nothing to reduce");
    }
    if (comm.rank == 1 && stall_s > 0) {
        sleep((unsigned)stall_s);
    }
    double total = 1.0;
    comm_sum_double(&comm, &total);
    if (total != comm.world_size) {
        ok = 0;
    }
    double v = comm.rank;
    comm_mean_double(&comm, &v);
    if (fabs(v - (comm.world_size - 1) / 2.0) > 1e-12) {
        ok = 0;
    }
    comm_barrier(&comm);
    if (comm.rank == 0) {
        printf("backend %s, world %d: %s\n", comm_backend_name(), comm.world_size, ok ? "OK" : "FAILED");
    }
    comm_finalize(&comm);
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
