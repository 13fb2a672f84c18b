#include "patch_embed.h"

#include <stddef.h>

void patches_from_images(float *patches, const float *images, int B, int Cin, int S, int P) {
    const int grid = S / P;
    const size_t patch_dim = (size_t)Cin * P * P;
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++) {
        for (int py = 0; py < grid; py++) {
            for (int px = 0; px < grid; px++) {
                float *dst = patches + (((size_t)b * grid + py) * grid + px) * patch_dim;
                for (int c = 0; c < Cin; c++) {
                    for (int dy = 0; dy < P; dy++) {
                        const float *src =
                            images + (((size_t)b * Cin + c) * S + (size_t)py * P + dy) * S +
                            (size_t)px * P;
                        for (int dx = 0; dx < P; dx++) {
                            *dst++ = src[dx];
                        }
                    }
                }
            }
        }
    }
}
