// The exponential moving average of the weights the vision trainers keep
// with -ema DECAY (timm's ModelEmaV2): it starts as a copy of the weights and
// after every optimizer step becomes
//   ema = decay * ema + (1 - decay) * w
// in fp32 (1 - decay rounded to a float first). The GPU's kernel
// (llmc/cuda/vision_ema.cuh) computes the same expression; this is its oracle.
#ifndef FOLDNORM_EMA_H
#define FOLDNORM_EMA_H

#include <stddef.h>

typedef struct {
    float *values; // the EMA, one value per parameter (file order), malloc'd; NULL: no EMA
    float decay;   // in (0, 1) with values, else 0
} WeightEma;

// One step of the average over n values: ema[i] = decay * ema[i] + (1 - decay) * weights[i].
void ema_update(float *ema, const float *weights, size_t n, float decay);

// Exchanges n values of a and b in place: the EMA into the model for a test
// pass and back again, exact both ways.
void ema_swap(float *a, float *b, size_t n);

// A WeightEma of decay over a copy of the n weights (a run's start).
WeightEma ema_start(const float *weights, size_t n, float decay);
void ema_free(WeightEma *ema);

#endif
