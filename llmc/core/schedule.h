// Learning-rate schedules as llm.c's -k (llm.c/llmc/schedulers.h): a linear
// warmup over warmup_steps to max_lr ((step + 1) / warmup_steps of it), then
//   cosine:   cosine decay to max_lr * final_fraction at max_steps;
//   linear:   linear decay to max_lr * final_fraction at max_steps;
//   constant: max_lr at every step (no warmup, as llm.c);
//   wsd:      warmup-stable-decay: max_lr until the decay point,
//             (int)((1 - decay_fraction) * max_steps), then
//             min + (1 - sqrt(r)) (max - min) with r the fraction of the
//             decay done (arXiv 2405.18392; llm.c fixes decay_fraction at 0.2).
// Each step's lr depends on the step alone, so a resume lands on the same lr.
#ifndef FOLDNORM_SCHEDULE_H
#define FOLDNORM_SCHEDULE_H

// -k's words are the enum's values in order (CLI_ENUM stores the index)
typedef enum { LR_COSINE = 0, LR_LINEAR = 1, LR_CONSTANT = 2, LR_WSD = 3 } LrScheduleKind;
#define LR_SCHEDULE_WORDS "cosine|linear|constant|wsd"

typedef struct {
    LrScheduleKind kind;
    float max_lr;
    int warmup_steps;
    int max_steps;
    float final_fraction; // -q: the lr at max_steps as a fraction of max_lr
    float decay_fraction; // -kd: wsd's share of max_steps that decays
} LrSchedule;

// The lr of step (0-based).
float lr_schedule_at(const LrSchedule *schedule, int step);

// The cosine schedule (the vision trainers' only one).
float lr_cosine_with_warmup(int step, int max_steps, int warmup_steps, float max_lr,
                            float final_fraction);

#endif
