// Checks ONNX Runtime's logits for an exported GPT-2 (test/onnx_ort.js wrote
// them, with the tokens it ran) against this project's CPU forward of the
// model file the export came from: max|ort - ours| / max|ours| <= -rt.
//
// usage: test_onnx_export [-rt rel_tol] -b B -t T MODEL.bin TOKENS.i32 LOGITS.f32
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/cli.h"
#include "gpt2/gpt2.h"
#include "fold/gpt2_fold.h"
#include "test_helpers.h"
#include "core/utils.h"

// A raw little-endian file of exactly n elements of elem_bytes.
static void *read_exact(const char *path, size_t n, size_t elem_bytes) {
    FILE *f = fopen_check(path, "rb");
    long bytes = file_size_bytes(f, path);
    if (bytes < 0 || (size_t)bytes != n * elem_bytes) {
        fatal("%s: %ld bytes, expected %zu (%zu values)", path, bytes, n * elem_bytes, n);
    }
    void *data = malloc_check(n * elem_bytes, path);
    fread_check(data, elem_bytes, n, f, path, "the values");
    fclose(f);
    return data;
}

int main(int argc, char **argv) {
    int B = 0, T = 0, fold = 0;
    float tol = 1e-5f;
    CliFlag flags[] = {
        {"-b", CLI_INT, &B, 1, 1 << 20, "batch size of the ONNX Runtime run (required)", NULL, 0, 0},
        {"-t", CLI_INT, &T, 1, 1 << 20, "sequence length of the run (required)", NULL, 0, 0},
        {"-rt", CLI_FLOAT, &tol, 0, 1, "relative tolerance (default 1e-5)", NULL, 0, 0},
        {"--fold", CLI_SWITCH, &fold, 0, 0, "fold the model first (its export used --fold)", NULL, 0, 0},
    };
    CliSpec spec = {.program = "test_onnx_export",
                    .synopsis = "-b B -t T [options] MODEL.bin TOKENS.i32 LOGITS.f32",
                    .flags = flags, .num_flags = CLI_COUNT(flags),
                    .min_positional = 3, .max_positional = 3};
    const char *args[3];
    cli_parse(&spec, argc, argv, args);
    if (B == 0 || T == 0) {
        cli_error(&spec, "-b and -t are needed");
    }
    GPT2 model;
    gpt2_load(&model, args[0]);
    if (fold) {
        gpt2_fold(&model, args[0]);
    }
    const int V = model.config.vocab_size, Vp = model.config.padded_vocab_size;
    if (T > model.config.max_seq_len) {
        fatal("-t %d is above the model's maxT %d", T, model.config.max_seq_len);
    }
    const size_t BT = (size_t)B * T;
    int *tokens = read_exact(args[1], BT, sizeof(int32_t));
    for (size_t i = 0; i < BT; i++) {
        if (tokens[i] < 0 || tokens[i] >= V) {
            fatal("%s: token %d at %zu is not in [0, %d)", args[1], tokens[i], i, V);
        }
    }
    float *ort = read_exact(args[2], BT * V, sizeof(float));
    gpt2_forward(&model, tokens, NULL, B, T);
    // ORT's rows are V wide, ours Vp (padded)
    double err = strided_relative_error(ort, model.acts.logits, BT, (size_t)V, (size_t)V, (size_t)Vp);
    printf("test_onnx_export: %s (%s), B=%d T=%d:\n", args[0], norm_mode_name(model.mode), B, T);
    int ok = report_within("logits, ONNX Runtime vs CPU forward", 36, err, tol);
    free(tokens);
    free(ort);
    gpt2_free(&model);
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
