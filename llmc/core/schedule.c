#include "schedule.h"

#include <math.h>

float lr_cosine_with_warmup(int step, int max_steps, int warmup_steps, float max_lr,
                            float final_fraction) {
    if (step < warmup_steps) {
        return max_lr * (float)(step + 1) / (float)warmup_steps;
    }
    float min_lr = max_lr * final_fraction;
    if (max_steps <= warmup_steps) {
        return max_lr;
    }
    float progress = (float)(step - warmup_steps) / (float)(max_steps - warmup_steps);
    if (progress > 1.0f) {
        progress = 1.0f;
    }
    float cosine = 0.5f * (1.0f + cosf(3.14159265358979f * progress));
    return min_lr + cosine * (max_lr - min_lr);
}
