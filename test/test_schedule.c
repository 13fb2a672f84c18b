// Prints the learning rate of every step of the schedule that train_gpt2's
// flags (-k -l -u -q -kd -x) describe, one "STEP LR" line each with 9
// significant digits: test/suites/lr_schedule.sh compares them with PyTorch's
// LambdaLR (dev/reference/lr_schedule.py).
#include <stdio.h>

#include "gpt2/gpt2_train_args.h"

int main(int argc, char **argv) {
    Gpt2TrainArgs args = gpt2_train_args_defaults();
    args.max_steps = 100;
    CliFlag flags[GPT2_TRAIN_MAX_FLAGS];
    CliSpec spec = {.program = "test_schedule", .synopsis = "[options]",
                    .about = "The learning rate of every step of train_gpt2's schedule\n"
                             "(-k -l -u -q -kd -x; -x defaults to 100 here).\n",
                    .flags = flags, .num_flags = gpt2_train_flags(&args, GPT2_FLAGS_CORE, flags)};
    cli_parse(&spec, argc, argv, NULL);
    const LrSchedule schedule = gpt2_train_schedule(&args, args.max_steps);
    for (int step = 0; step < args.max_steps; step++) {
        printf("%d %.9e\n", step, (double)lr_schedule_at(&schedule, step));
    }
    return 0;
}
