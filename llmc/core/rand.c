#include "rand.h"

#include <math.h>

void rng_seed(Rng *rng, uint64_t seed) {
    uint64_t z = seed + 0x9E3779B97F4A7C15ull; // splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    rng->state = z != 0 ? z : 0x2545F4914F6CDD1Dull;
}

uint32_t rng_u32(Rng *rng) {
    uint64_t x = rng->state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng->state = x;
    return (uint32_t)((x * 0x2545F4914F6CDD1Dull) >> 32);
}

float rng_uniform(Rng *rng) {
    return (float)(rng_u32(rng) >> 8) / 16777216.0f;
}

void rng_normal_fill(Rng *rng, float *x, size_t n, float mean, float std) {
    const double two_pi = 6.283185307179586;
    for (size_t i = 0; i < n; i += 2) {
        double u1 = 1.0 - rng_uniform(rng); // (0, 1]: log stays finite
        double u2 = rng_uniform(rng);
        double r = sqrt(-2.0 * log(u1));
        x[i] = (float)(mean + std * r * cos(two_pi * u2));
        if (i + 1 < n) {
            x[i + 1] = (float)(mean + std * r * sin(two_pi * u2));
        }
    }
}
