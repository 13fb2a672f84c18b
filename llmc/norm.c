#include "norm.h"

#include <stddef.h>
#include <stdlib.h>

#include "utils.h"

// The gain and bias gradients are sums over all N rows. Each row chunk sums
// its rows into its own partials, then the chunks are added in order: one
// pass over x and dy, and the same result for any number of threads.
enum { MAX_CHUNKS = 32 };

int norm_num_chunks(int N) {
    return N < MAX_CHUNKS ? N : MAX_CHUNKS;
}

void norm_chunk_rows(int chunk, int num_chunks, int N, int *row_begin, int *row_end) {
    *row_begin = (int)((long)N * chunk / num_chunks);
    *row_end = (int)((long)N * (chunk + 1) / num_chunks);
}

float *norm_partials_alloc(int num_chunks, int C) {
    return calloc_check((size_t)num_chunks * 2 * (size_t)C, sizeof(float), "norm gradient partials");
}

// Serial: C x num_chunks additions cost less than a parallel region's barrier.
void norm_partials_reduce(float *dgain, float *dbias, float *partials, int num_chunks, int C) {
    for (int c = 0; c < C; c++) {
        float g = 0.0f, b = 0.0f;
        for (int k = 0; k < num_chunks; k++) {
            g += partials[((size_t)k * 2) * C + c];
            b += partials[((size_t)k * 2 + 1) * C + c];
        }
        dgain[c] += g;
        dbias[c] += b;
    }
    free(partials);
}

void norm_forward(NormKind kind, float *out, float *mean, float *rstd, const float *inp,
                  const float *gain, const float *bias, int N, int C) {
    if (kind == NORM_LAYER) {
        layernorm_forward(out, mean, rstd, inp, gain, bias, N, C);
    } else {
        rmsnorm_forward(out, rstd, inp, gain, bias, N, C);
    }
}

void norm_backward(NormKind kind, float *dinp, float *dgain, float *dbias, const float *dout,
                   const float *inp, const float *gain, const float *mean, const float *rstd,
                   int N, int C) {
    if (kind == NORM_LAYER) {
        layernorm_backward(dinp, dgain, dbias, dout, inp, gain, mean, rstd, N, C);
    } else {
        rmsnorm_backward(dinp, dgain, dbias, dout, inp, gain, rstd, N, C);
    }
}
