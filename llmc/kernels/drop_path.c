#include "drop_path.h"

#include <stdio.h>

#include "core/utils.h"

float drop_path_rate(float rate, int block, int num_blocks) {
    return num_blocks > 1 ? rate * (float)block / (float)(num_blocks - 1) : 0.0f;
}

void drop_path_draw(float *scales, int B, int num_blocks, float rate, Rng *rng) {
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < num_blocks; i++) {
            const float keep = 1.0f - drop_path_rate(rate, i, num_blocks);
            for (int j = 0; j < DROP_PATH_BRANCHES; j++) {
                scales[((size_t)b * num_blocks + i) * DROP_PATH_BRANCHES + j] =
                    rng_uniform(rng) < keep ? 1.0f / keep : 0.0f;
            }
        }
    }
}

unsigned long long drop_path_batch_seed(unsigned long long seed, int epoch, int batch) {
    // distinct odd multipliers (splitmix64's, golden ratio) per coordinate
    return (seed ^ 0xD209A7ULL) + 0xBF58476D1CE4E5B9ULL * (unsigned long long)epoch +
           0x9E3779B97F4A7C15ULL * (unsigned long long)batch;
}

unsigned long long drop_path_draw_seed(unsigned long long seed, unsigned long long draw) {
    // another stream than drop_path_batch_seed's (epoch 0) for the same numbers
    return (seed ^ 0x6D2B79F5ULL) + 0x94D049BB133111EBULL * draw;
}

void drop_path_residual_add(float *out, const float *residual, const float *branch,
                            const float *scales, size_t stride, int B, size_t n) {
#pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) {
        const float s = scales[(size_t)b * stride];
        const size_t o = (size_t)b * n;
        for (size_t i = 0; i < n; i++) {
            out[o + i] = residual[o + i] + s * branch[o + i];
        }
    }
}

void drop_path_scale(float *dst, const float *src, const float *scales, size_t stride, int B,
                     size_t n) {
#pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) {
        const float s = scales[(size_t)b * stride];
        const size_t o = (size_t)b * n;
        for (size_t i = 0; i < n; i++) {
            dst[o + i] = s * src[o + i];
        }
    }
}

float *drop_path_scales_load(const char *path, int B, int num_blocks) {
    if (path == NULL) {
        return NULL;
    }
    const size_t n = (size_t)B * num_blocks * DROP_PATH_BRANCHES;
    float *scales = malloc_check(n * sizeof(float), "drop-path scales");
    FILE *f = fopen_check(path, "rb");
    fread_check(scales, sizeof(float), n, f, path, "drop-path scales");
    if (fgetc(f) != EOF) {
        fatal("%s: longer than B x blocks x 2 = %zu scales", path, n);
    }
    fclose(f);
    return scales;
}
