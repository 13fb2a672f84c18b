// llmc/comm: under mpirun every rank fills a buffer with values that depend
// on its rank; after comm_allreduce_mean each element must equal the mean
// over ranks computed here in closed form. A buffer longer than one chunk
// would need 256 MiB, so the chunking is exercised by the count arithmetic
// only; sizes 1, odd and large-ish cover the rest.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "comm.h"
#include "utils.h"

int main(int argc, char **argv) {
    CliSpec spec = {.program = "test_comm", .synopsis = "",
                    .about = "Run under mpirun -n N: comm_allreduce_mean against the closed-form mean.\n"};
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
            worst = err > worst ? err : worst;
        }
        if (worst > 1e-6) {
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
            worst_shard = err > worst_shard ? err : worst_shard;
        }
        comm_allgather_shards(&comm, x, n);
        for (size_t i = 0; i < n; i++) {
            double expect = (double)(i % 89) * (W + 1) / 2 - (W - 1) / 2;
            double err = fabs(x[i] - expect) / (fabs(expect) + 1.0);
            worst = err > worst ? err : worst;
        }
        double worst_all = worst > worst_shard ? worst : worst_shard;
        comm_sum_double(&comm, &worst_all); // any rank's error fails every rank
        int this_ok = covered == n && worst_all <= 1e-6 * W;
        ok = ok && this_ok;
        free(x);
        if (comm.rank == 0) {
            printf("reduce-scatter + all-gather of %zu floats over %d ranks: max rel err %.2e %s\n",
                   n, comm.world_size, worst_all, this_ok ? "ok" : "FAIL");
        }
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
