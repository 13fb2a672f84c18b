// bench_allreduce: the time of comm_allreduce_mean (llmc/core/comm.c, the
// trainers' MPI all-reduce) over message sizes from 4 bytes to 64 MB, to see
// what a link's latency and rate cost. Under mpirun: every size -r times
// after one untimed call, a barrier before each call; rank 0 prints each
// size's fastest and median time (a call's time is the slowest rank's) and
// the bytes a second of the median. Not a test: it asserts nothing.
//   mpirun -np 2 bin/bench_allreduce [-r REPS]
//   on the namespace cluster (scripts/cluster/netns_cluster.sh):
//   CLUSTER/mpirun -np 2 --map-by node bin/bench_allreduce; docs/performance.md
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/cli.h"
#include "core/comm.h"
#include "core/utils.h"

static double now_s(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        fprintf(stderr, "error: clock_gettime failed\n");
        exit(1);
    }
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int reps = 9;
    CliFlag flags[] = {{"-r", CLI_INT, &reps, 1, 1000, "timed calls per size (default 9)", NULL, 0, 0}};
    CliSpec spec = {.program = "bench_allreduce", .synopsis = "",
                    .about = "Run under mpirun -np N: the median time of comm_allreduce_mean per message size.\n",
                    .flags = flags, .num_flags = CLI_COUNT(flags)};
    cli_parse(&spec, argc, argv, NULL);
    Comm comm;
    comm_init(&comm, &argc, &argv);
    const size_t max_n = (size_t)16 << 20; // 64 MB of floats
    float *x = malloc_check(max_n * sizeof(float), "buffer");
    for (size_t i = 0; i < max_n; i++) x[i] = (float)(i % 7);
    double *t = malloc_check((size_t)reps * sizeof(double), "times");
    if (comm.rank == 0) {
        printf("comm_allreduce_mean over %d ranks (%s), median of %d calls\n", comm.world_size,
               comm_backend_name(), reps);
        printf("%12s %12s %12s %12s\n", "bytes", "min us", "median us", "MB/s (median)");
    }
    for (size_t n = 1; n <= max_n; n *= 16) {
        comm_allreduce_mean(&comm, x, n); // untimed: connections, buffers
        for (int r = 0; r < reps; r++) {
            comm_barrier(&comm);
            double t0 = now_s();
            comm_allreduce_mean(&comm, x, n);
            double dt = now_s() - t0;
            // the call ends when the slowest rank has it: time the slowest (in us)
            t[r] = comm_max_int(&comm, (int)(dt * 1e6 + 0.5)) * 1e-6;
        }
        qsort(t, (size_t)reps, sizeof(double), by_value);
        double med = t[reps / 2];
        if (comm.rank == 0)
            printf("%12zu %12.1f %12.1f %12.1f\n", n * sizeof(float), t[0] * 1e6, med * 1e6,
                   (double)(n * sizeof(float)) / med / 1e6);
    }
    free(t);
    free(x);
    comm_finalize(&comm);
    return 0;
}
