// Learning-rate schedule as in llm.c: linear warmup over warmup_steps to
// max_lr, then cosine decay to max_lr * final_fraction at max_steps.
#ifndef FOLDNORM_SCHEDULE_H
#define FOLDNORM_SCHEDULE_H

float lr_cosine_with_warmup(int step, int max_steps, int warmup_steps, float max_lr,
                            float final_fraction);

#endif
