// Checks train_gpt2's model against a debug state written by an independent
// reference (dev/reference/gpt2.py, or llm.c's train_gpt2.py): logits, loss,
// every parameter gradient and, when the state holds them, the losses of N
// AdamW steps on the same batch; with -rd, under residual dropout whose masks
// the reference redoes from llmc/kernels/dropout.c's hash; with -dp, under
// stochastic depth with the (B, L, 2) scales the reference drew and wrote
// (dev/reference/drop_path.py), the same at every forward.
//
// Tolerances (fp32): a tensor passes when max|ours - ref| <= tol * max|ref|.
// Both sides sum hundreds of fp32 products in different orders; the rounding
// error of such sums is ~sqrt(n) * 6e-8 relative to the magnitude of the
// tensor, i.e. ~1e-6 at these sizes, so tol = 1e-5 leaves a 10x margin
// while a wrong formula shows up as 1e-2 or more.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "interop/debug_state.h"
#include "gpt2/gpt2.h"
#include "core/utils.h"
#include "kernels/drop_path.h"
#include "test_helpers.h"

int main(int argc, char **argv) {
    const char *mode_name = NULL;
    double rel_tol = 1e-5, loss_tol = 1e-4;
    int forward_only = 0;
    float resid_dropout = 0.0f;
    unsigned long long dropout_seed = 0;
    const char *drop_path = NULL;
    CliFlag flags[] = {
        {"-N", CLI_CHOICE, &mode_name, 0, 0,
         "norm mode (default: the one recorded in the model file)", NORM_MODE_FLAG_WORDS, 0, 0},
        {"-rt", CLI_DOUBLE, &rel_tol, 0, 1,
         "relative tolerance for logits and gradients (default 1e-5)", NULL, CLI_OPEN_LO, 0},
        {"-lt", CLI_DOUBLE, &loss_tol, 0, 1,
         "absolute tolerance for the losses of the AdamW steps (default 1e-4)", NULL, CLI_OPEN_LO,
         0},
        {"-rd", CLI_FLOAT, &resid_dropout, 0, 1,
         "residual dropout in train mode, forward k with draw k (the reference's\n"
         "--resid-dropout) (default 0)", NULL, CLI_OPEN_HI, 0},
        {"-sd", CLI_SEED, &dropout_seed, 0, 0,
         "seed of the dropout masks (the reference's --dropout-seed) (default 0)", NULL, 0, 0},
        {"-dp", CLI_STRING, &drop_path, 0, 0,
         "stochastic depth in train mode with these (B, L, 2) fp32 scales at every\n"
         "forward (the reference's --drop-path-scales) (default: off)", "file", 0, 0},
        {"--forward-only", CLI_SWITCH, &forward_only, 0, 0,
         "logits and loss only (e.g. a folded model against the\n"
         "state of the ln model it came from)", NULL, 0, 0},
    };
    CliSpec spec = {.program = "test_gpt2",
                    .synopsis = "[options] MODEL.bin STATE.bin",
                    .about = "Checks logits, loss, gradients and AdamW losses against a debug state\n"
                             "(dev/reference/gpt2.py --state).\n",
                    .flags = flags, .num_flags = CLI_COUNT(flags),
                    .min_positional = 2, .max_positional = 2};
    const char *files[2];
    cli_parse(&spec, argc, argv, files);
    const char *model_path = files[0], *state_path = files[1];
    GPT2 model;
    gpt2_load(&model, model_path);
    if (mode_name != NULL && norm_mode_parse(mode_name, &model.mode) != 0) {
        fatal("-N: unknown norm mode '%s' (expected ln, rms or cbwc)", mode_name);
    }
    gpt2_set_resid_dropout(&model, resid_dropout, dropout_seed);
    GPT2DebugState s;
    gpt2_debug_state_load(&s, state_path, &model);
    float *drop_scales = drop_path_scales_load(drop_path, s.B, model.config.num_layers);
    gpt2_set_drop_path_scales(&model, drop_scales);
    const int V = model.config.vocab_size, Vp = model.config.padded_vocab_size;
    const size_t BT = (size_t)s.B * s.T;
    printf("test_gpt2: %s mode, L=%d C=%d V=%d B=%d T=%d, %d AdamW steps\n",
           norm_mode_name(model.mode), model.config.num_layers, model.config.channels, V, s.B,
           s.T, s.num_steps);

    int ok = 1;
    gpt2_forward_train(&model, s.x, s.y, s.B, s.T, 0); // = gpt2_forward without -rd
    ok &= check_error("logits", strided_relative_error(model.acts.logits, s.logits, BT, V, Vp, V),
                      rel_tol);
    ok &= check_error("loss", fabs(model.mean_loss - s.loss) / fabs(s.loss), rel_tol);
    if (forward_only) {
        s.num_steps = 0;
        goto done;
    }
    gpt2_zero_grad(&model);
    gpt2_backward(&model, 1.0f / (float)model.loss_tokens); // mean over unmasked targets
    if (test_inject_nan("grad")) {
        model.grads_memory[model.num_parameters / 2] = NAN; // it then spreads into the steps
    }
    size_t offset = 0;
    for (int i = 0; i < GPT2_NUM_PARAM_TENSORS; i++) {
        size_t n = model.param_sizes[i];
        ok &= check_error(gpt2_param_name(i),
                          relative_error(model.grads_memory + offset, s.grads + offset, n),
                          rel_tol);
        offset += n;
    }
    // losses of N AdamW steps on the same batch: loss k is measured after k updates
    if (s.num_steps > 0) {
        double worst = 0.0;
        float last = 0.0f;
        for (int k = 0; k < s.num_steps; k++) {
            if (k > 0) {
                gpt2_update(&model, &s.adamw, s.grad_clip);
            }
            gpt2_forward_train(&model, s.x, s.y, s.B, s.T, (uint64_t)k);
            last = model.mean_loss;
            if (k == 1 && test_inject_nan("loss")) {
                last = NAN;
            }
            worst = worst_of(worst, fabs(last - s.losses[k]));
            gpt2_zero_grad(&model);
            gpt2_backward(&model, 1.0f / (float)model.loss_tokens); // mean over unmasked targets
        }
        printf("  last loss  ours %.6f  reference %.6f\n", last,
               s.losses[s.num_steps - 1]);
        ok &= check_error("steps", worst, loss_tol);
    }
done:
    printf("%s\n", ok ? "OK" : "FAILED");
    gpt2_free(&model);
    free(drop_scales);
    gpt2_debug_state_free(&s);
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
