// AdamW as torch.optim.AdamW: decoupled weight decay p *= 1 - lr*wd, then
// p -= (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps).
#ifndef FOLDNORM_ADAMW_H
#define FOLDNORM_ADAMW_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    float learning_rate;
    float beta1;
    float beta2;
    float eps;
    float weight_decay;
} AdamWConfig;

// One step t (1-based) over n parameters; grads are multiplied by grad_scale
// first (global-norm clipping). weight_decay_on selects decay for this tensor.
void adamw_update(float *params, const float *grads, float *m, float *v, size_t n,
                  const AdamWConfig *cfg, int weight_decay_on, int t, float grad_scale);

// One step of a whole model: t = ++*step over parameter tensors stored back
// to back (tensor i holds sizes[i] values, decayed when decay[i]); allocates
// the moments *m, *v on first use and first clips by the global gradient norm
// (grad_clip <= 0: no clipping). With params_bf16 != NULL (num_params
// values) it also writes the bf16 rounding of every updated parameter (bf16.h)
// in the same pass.
void adamw_step_tensors(float *params, uint16_t *params_bf16, const float *grads, float **m,
                        float **v, int *step, size_t num_params, const size_t *sizes,
                        const unsigned char *decay, int num_tensors, const AdamWConfig *cfg,
                        float grad_clip);

// The same step restricted to the parameters [lo, hi) of the flat vector (a
// ZeRO-1 shard: tensors that straddle its ends are updated in part); the
// caller computes grad_scale from the global gradient norm. Moments are
// allocated for all num_params so that a checkpoint holds them whole.
void adamw_step_tensors_range(float *params, const float *grads, float **m, float **v, int *step,
                              size_t num_params, const size_t *sizes,
                              const unsigned char *decay, int num_tensors, const AdamWConfig *cfg,
                              float grad_scale, size_t lo, size_t hi);

// sum of squares of n values, accumulated in double.
double sum_of_squares(const float *x, size_t n);

// torch.nn.utils.clip_grad_norm_: scale = min(1, clip / (norm + 1e-6)); clip <= 0 disables.
float clip_grad_scale(double grad_norm, float clip);

#endif
