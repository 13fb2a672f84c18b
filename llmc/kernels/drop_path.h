// Stochastic depth (drop-path, Huang et al. 2016, as timm's DropPath): in
// training each residual branch of each sample is dropped whole with
// probability p or kept and scaled by 1 / (1 - p), so the block's output is
// x + s * f(x) with one number s per sample and branch. A branch that CBWC
// makes zero-mean stays zero-mean, so cbwc is still the ln model
// (docs/math.md section 6). Rates grow linearly over depth, as Swin's
// torch.linspace(0, rate, depth): block i of n drops with rate * i / (n - 1).
#ifndef FOLDNORM_DROP_PATH_H
#define FOLDNORM_DROP_PATH_H

#include <stddef.h>

#include "core/rand.h"

// Two branches per block (attention, MLP).
enum { DROP_PATH_BRANCHES = 2 };

// The drop rate of block i of n under the linear rule (0 for n = 1).
float drop_path_rate(float rate, int block, int num_blocks);
// scales (B, num_blocks, DROP_PATH_BRANCHES), sample-major: one draw of rng
// per entry in that order (rng_uniform < 1 - p keeps), 1 / (1 - p) or 0.
void drop_path_draw(float *scales, int B, int num_blocks, float rate, Rng *rng);
// out[b] = residual[b] + scale_b * branch[b] for B samples of n floats, scale_b
// = scales[b * stride]; out may alias residual or branch.
void drop_path_residual_add(float *out, const float *residual, const float *branch,
                            const float *scales, size_t stride, int B, size_t n);
// The seed of global batch (epoch, batch)'s masks, from the run's seed: a
// stream of its own per batch, so the masks depend on neither the rank count
// nor the prefetch, and a resume draws them again bit for bit.
unsigned long long drop_path_batch_seed(unsigned long long seed, int epoch, int batch);
// The seed of GPT-2's masks of forward `draw` (one draw per micro-batch and
// rank, as its residual dropout's), from the run's seed: a resume redraws them.
unsigned long long drop_path_draw_seed(unsigned long long seed, unsigned long long draw);
// dst[b] = scale_b * src[b] (the branch's output gradient; dst may alias src).
void drop_path_scale(float *dst, const float *src, const float *scales, size_t stride, int B,
                     size_t n);
// The (B, num_blocks, 2) scales a reference wrote as raw fp32
// (dev/reference/drop_path.py), malloc'd, or NULL when path is NULL; dies
// naming the file when it holds another number of scales.
float *drop_path_scales_load(const char *path, int B, int num_blocks);

#endif
