#include "dropout.h"

#define GOLDEN_GAMMA 0x9E3779B97F4A7C15ull

// splitmix64's finaliser: a bijection of 64-bit words that mixes every bit
static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float dropout_uniform(uint64_t seed, uint64_t stream, uint64_t i) {
    uint64_t key = mix64(seed + GOLDEN_GAMMA * (stream + 1));
    uint64_t h = mix64(key + GOLDEN_GAMMA * (i + 1));
    return (float)(h >> 40) / 16777216.0f; // top 24 bits: exact in fp32
}

void dropout_apply(float *out, const float *in, size_t n, float p, uint64_t seed, uint64_t stream) {
    const float scale = 1.0f / (1.0f - p);
    uint64_t key = mix64(seed + GOLDEN_GAMMA * (stream + 1));
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        float u = (float)(mix64(key + GOLDEN_GAMMA * (i + 1)) >> 40) / 16777216.0f;
        out[i] = u >= p ? in[i] * scale : 0.0f;
    }
}
