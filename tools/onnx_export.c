// onnx_export: a GPT-2 model (ln, rms, cbwc or folded file, or a descriptor
// for a random one) as an fp32 ONNX graph, token ids -> logits, that ONNX
// Runtime runs (docs/formats.md, "ONNX export"). --fold folds an ln or cbwc
// model first (as bin/fold does), so the graph has RMSNorm and no centring.
#include <stdio.h>
#include <stdlib.h>

#include "core/cli.h"
#include "gpt2/gpt2.h"
#include "fold/gpt2_fold.h"
#include "interop/onnx_export.h"
#include "core/utils.h"

int main(int argc, char **argv) {
    const char *model_arg = NULL, *mode_name = NULL;
    unsigned long long seed = 1337;
    int fold = 0;
    CliFlag flags[] = {
        {"-e", CLI_STRING, &model_arg, 0, 0,
         "GPT-2 model file (llm.c format: ln, rms, cbwc or folded), or a descriptor (d12,\n"
         "d4c128h4v256t256) for a random model (required)", "file|descriptor", 0, 0},
        {"-N", CLI_CHOICE, &mode_name, 0, 0, "norm mode of a random model (default ln)", NORM_MODE_FLAG_WORDS, 0, 0},
        {"-sd", CLI_SEED, &seed, 0, 0, "seed of a random model (default 1337)", NULL, 0, 0},
        {"--fold", CLI_SWITCH, &fold, 0, 0, "fold an ln or cbwc model first (bin/fold)", NULL, 0, 0},
    };
    CliSpec spec = {.program = "onnx_export",
                    .synopsis = "-e MODEL [options] OUT.onnx",
                    .about = "  OUT.onnx  the model as an ONNX graph (opset 17): input idx int64 [B, T],\n"
                             "            output logits float [B, T, V]\n",
                    .flags = flags, .num_flags = CLI_COUNT(flags),
                    .min_positional = 1, .max_positional = 1};
    const char *out_path;
    cli_parse(&spec, argc, argv, &out_path);
    if (model_arg == NULL) {
        cli_error(&spec, "-e: a model file or descriptor is needed");
    }
    GPT2 model;
    GPT2Config cfg;
    if (gpt2_parse_descriptor(model_arg, &cfg) == 0) {
        const char *why = gpt2_config_error(&cfg);
        if (why != NULL) {
            cli_error(&spec, "-e %s: %s", model_arg, why);
        }
        NormMode mode = MODE_LN;
        if (mode_name != NULL && norm_mode_parse(mode_name, &mode) != 0) {
            cli_error(&spec, "-N: unknown norm mode '%s'", mode_name);
        }
        gpt2_init_random(&model, &cfg, mode, seed);
    } else {
        if (mode_name != NULL) {
            cli_error(&spec, "-N applies to a random model (a descriptor), not to the file %s",
                      model_arg);
        }
        gpt2_load(&model, model_arg);
    }
    if (fold) {
        gpt2_fold(&model, model_arg);
    }
    size_t bytes = gpt2_onnx_save(&model, out_path);
    printf("onnx_export: %s (norm mode %s) -> %s: %zu bytes, L=%d C=%d NH=%d V=%d maxT=%d\n",
           model_arg, norm_mode_name(model.mode), out_path, bytes, model.config.num_layers,
           model.config.channels, model.config.num_heads, model.config.vocab_size,
           model.config.max_seq_len);
    gpt2_free(&model);
    return EXIT_SUCCESS;
}
