#include "schedule.h"

#include <math.h>

// In double, rounded to float once: each lr is the float nearest the
// definition's value (PyTorch's LambdaLR to 1e-7 of max_lr, test/suites/lr_schedule.sh).

// the fraction of the decay from `start` to max_steps done at step, in [0, 1]
static double decay_progress(int step, int start, int max_steps) {
    const double progress = (double)(step - start) / (double)(max_steps - start);
    return progress > 1.0 ? 1.0 : progress;
}

// the lr of one of the decaying schedules at step, past the warmup
static double decayed_lr(const LrSchedule *s, int step) {
    const double max_lr = s->max_lr, min_lr = max_lr * (double)s->final_fraction;
    if (s->kind == LR_WSD) {
        // llm.c's decay point, taken in float: (int)(0.8f * max_steps) for -kd 0.2
        const int decay_start = (int)((1.0f - s->decay_fraction) * (float)s->max_steps);
        if (step < decay_start || s->max_steps <= decay_start) {
            return max_lr;
        }
        return min_lr + (1.0 - sqrt(decay_progress(step, decay_start, s->max_steps))) *
                            (max_lr - min_lr);
    }
    if (s->max_steps <= s->warmup_steps) {
        return max_lr;
    }
    const double progress = decay_progress(step, s->warmup_steps, s->max_steps);
    if (s->kind == LR_LINEAR) {
        return max_lr - progress * (max_lr - min_lr);
    }
    return min_lr + 0.5 * (1.0 + cos(M_PI * progress)) * (max_lr - min_lr); // cosine
}

float lr_schedule_at(const LrSchedule *s, int step) {
    if (s->kind == LR_CONSTANT) {
        return s->max_lr;
    }
    if (step < s->warmup_steps) {
        return (float)((double)s->max_lr * (double)(step + 1) / (double)s->warmup_steps);
    }
    return (float)decayed_lr(s, step);
}

float lr_cosine_with_warmup(int step, int max_steps, int warmup_steps, float max_lr,
                            float final_fraction) {
    const LrSchedule s = {.kind = LR_COSINE, .max_lr = max_lr, .warmup_steps = warmup_steps,
                          .max_steps = max_steps, .final_fraction = final_fraction};
    return lr_schedule_at(&s, step);
}
