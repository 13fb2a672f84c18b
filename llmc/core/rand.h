// A small seeded PRNG (xorshift64*, seeded through splitmix64): reproducible
// weight init, batches and sampling. The state is a plain value so that a
// checkpoint can save and restore it.
#ifndef FOLDNORM_RAND_H
#define FOLDNORM_RAND_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t state;
} Rng;

void rng_seed(Rng *rng, uint64_t seed);
uint32_t rng_u32(Rng *rng);
// Uniform in [0, 1).
float rng_uniform(Rng *rng);
// Fills x with N(mean, std) values (Box-Muller).
void rng_normal_fill(Rng *rng, float *x, size_t n, float mean, float std);

#endif
