// llmc/comm: under mpirun every rank fills a buffer with values that depend
// on its rank; after comm_allreduce_mean each element must equal the mean
// over ranks computed here in closed form. A buffer longer than one chunk
// would need 256 MiB, so the chunking is exercised by the count arithmetic
// only; sizes 1, odd and large-ish cover the rest.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "comm.h"
#include "utils.h"

int main(int argc, char **argv) {
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
