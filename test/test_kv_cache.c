// Checks generation with the KV cache (llmc/gpt2/kv_cache.c) against the full
// recompute (gpt2_forward, itself checked against the PyTorch reference by
// test_gpt2): from a random prompt, G greedy tokens with the cache; at every
// generated position the logits it drew from must equal gpt2_forward's
// logits of the same context within -rt relative (max |diff| / max |ref|);
// greedy and seeded top-k sampling must give the same tokens both ways; a
// stop token must end generation at its first occurrence; a sequence
// sharing a prefix with the held one gets gpt2_forward's logits. When prompt +
// G exceed maxT the context slides (generate_text): this test derives each
// position's context from the documented rule itself.
//
// Tolerance 1e-5: the two sides run the same kernels on the same weights
// and differ only in fp32 summation order (one-row dot products vs blocked
// GEMM, a one-pass vs the blocked online softmax), ~1e-7 relative per op;
// the observed maximum over the suite's models is ~1e-6.
//
// usage: test_kv_cache [-g G] [-pl P] [-sd SEED] [-rt TOL] MODEL.bin
//        test_kv_cache -w OUT.bin -e DESCRIPTOR -N ln|rms|cbwc [-sd SEED] [-eb BIAS]
// -w writes a random model whose every parameter is perturbed (gains and
// biases not 1 and 0, sharper logits than an init); -eb makes the logit of
// <|endoftext|> (token V - 1) about BIAS at every position, so that sampling
// draws it now and then (for sample -sft's stop).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "gpt2/gpt2.h"
#include "gpt2/kv_cache.h"
#include "core/norm_mode.h"
#include "core/rand.h"
#include "gpt2/sampler.h"
#include "test_helpers.h"
#include "core/utils.h"

static void write_random_model(const char *path, const char *descriptor, const char *mode_name,
                               unsigned long long seed, float eot_bias) {
    GPT2Config config;
    NormMode mode;
    if (gpt2_parse_descriptor(descriptor, &config) != 0 || gpt2_config_error(&config) != NULL) {
        fatal("-e %s: not a usable model descriptor", descriptor);
    }
    if (norm_mode_parse(mode_name, &mode) != 0) {
        fatal("-N %s: expected ln, rms or cbwc", mode_name);
    }
    GPT2 model;
    gpt2_init_random(&model, &config, mode, seed);
    Rng rng;
    rng_seed(&rng, seed + 1);
    float *noise = malloc_check(model.num_parameters * sizeof(float), "noise");
    rng_normal_fill(&rng, noise, model.num_parameters, 0.0f, 0.1f);
    for (size_t i = 0; i < model.num_parameters; i++) {
        model.params_memory[i] += noise[i];
    }
    free(noise);
    const int C = config.channels, eot = config.vocab_size - 1;
    if (eot_bias != 0.0f) {
        // lnfb scaled to norm 16 and wte[eot] = (bias / 16) lnfb / |lnfb|: the
        // logit of eot is bias + O(bias / 16) whatever the seed, the others'
        // log-sum-exp about ln V + 1
        float *b = model.params.lnfb, *e = model.params.wte + (size_t)eot * C;
        float norm2 = 0.0f;
        for (int c = 0; c < C; c++) {
            norm2 += b[c] * b[c];
        }
        const float scale = 16.0f / sqrtf(norm2);
        for (int c = 0; c < C; c++) {
            b[c] *= scale;
            e[c] = eot_bias / 16.0f * b[c] / 16.0f;
        }
    }
    gpt2_save(&model, path);
    gpt2_free(&model);
}

static int check(const char *path, int G, int P, unsigned long long seed, double tol) {
    GPT2 model;
    gpt2_load(&model, path);
    const GPT2Config *c = &model.config;
    const int V = c->vocab_size, Vp = c->padded_vocab_size, maxT = c->max_seq_len;
    const int total = P + G;
    int fails = 0;
    int *cached = malloc_check((size_t)total * sizeof(int), "tokens");
    int *full = malloc_check((size_t)total * sizeof(int), "tokens");
    float *logits = malloc_check((size_t)G * V * sizeof(float), "logits");
    Rng rng;
    rng_seed(&rng, seed);
    for (int t = 0; t < P; t++) {
        cached[t] = full[t] = (int)(rng_u32(&rng) % (uint32_t)V);
    }
    KVCache cache;
    kv_cache_init(&cache, &model);

    // 1. greedy with the cache, the logits of every generated position kept
    GenerateOptions with_cache = {.temperature = 0.0f, .stop_token = -1, .cache = &cache,
                                  .logits = logits};
    double t0 = now_seconds();
    generate_text(&model, cached, P, total, &with_cache, &rng);
    double cached_s = now_seconds() - t0;
    // each position's context by the rule in sampler.h: it starts at 0 and,
    // when it would pass maxT tokens, restarts at its last (maxT + 1) / 2
    double worst = 0.0;
    int worst_t = P, slides = 0;
    for (int t = P, start = 0; t < total; t++) {
        if (t - start > maxT) {
            start = t - (maxT + 1) / 2;
            slides++;
        }
        gpt2_forward(&model, cached + start, NULL, 1, t - start);
        const float *ref = model.acts.logits + (size_t)(t - start - 1) * Vp;
        double err = relative_error(logits + (size_t)(t - P) * V, ref, (size_t)V);
        if (!(err <= worst) && !isnan(worst)) {
            worst_t = t;
        }
        worst = worst_of(worst, err);
    }
    int ok = worst <= tol;
    fails += !ok;
    printf("%-4s %s (%s): logits of %d generated positions vs gpt2_forward: max rel err %.2e "
           "(at %d; tol %.0e), %d window slides\n",
           ok ? "ok" : "FAIL", path, norm_mode_name(model.mode), G, worst, worst_t, tol, slides);

    // 2. greedy by full recompute: the same tokens
    GenerateOptions no_cache = {.temperature = 0.0f, .stop_token = -1};
    t0 = now_seconds();
    generate_text(&model, full, P, total, &no_cache, &rng);
    double full_s = now_seconds() - t0;
    int diverge = -1;
    for (int t = P; t < total && diverge < 0; t++) {
        if (full[t] != cached[t]) diverge = t;
    }
    fails += diverge >= 0;
    printf("%-4s greedy tokens: %d with the cache == %d by full recompute%s (%.3f s vs %.3f s)\n",
           diverge < 0 ? "ok" : "FAIL", G, G, diverge < 0 ? "" : " differ", cached_s, full_s);
    if (diverge >= 0) {
        printf("     first difference at position %d: %d vs %d\n", diverge, cached[diverge],
               full[diverge]);
    }

    // 3. top-k sampling with one seed: the same draws (the cache left as it is)
    GenerateOptions sample_cache = {.temperature = 1.0f, .top_k = 40, .stop_token = -1,
                                    .cache = &cache};
    GenerateOptions sample_full = {.temperature = 1.0f, .top_k = 40, .stop_token = -1};
    Rng r1, r2;
    rng_seed(&r1, seed + 7);
    rng_seed(&r2, seed + 7);
    generate_text(&model, cached, P, total, &sample_cache, &r1);
    generate_text(&model, full, P, total, &sample_full, &r2);
    int same = memcmp(cached, full, (size_t)total * sizeof(int)) == 0;
    fails += !same;
    printf("%-4s top-k 40 sampling, one seed: the same %d tokens with and without the cache\n",
           same ? "ok" : "FAIL", G);

    // 4. a stop token: the sampled text up to its first occurrence, which ends it
    const int stop = cached[P + G / 2];
    int first = P + G / 2;
    for (int t = P; t < P + G / 2; t++) {
        if (cached[t] == stop) {
            first = t;
            break;
        }
    }
    int *stopped = malloc_check((size_t)total * sizeof(int), "tokens");
    memcpy(stopped, cached, (size_t)P * sizeof(int));
    GenerateOptions with_stop = sample_cache;
    with_stop.stop_token = stop;
    rng_seed(&r1, seed + 7);
    int end = generate_text(&model, stopped, P, total, &with_stop, &r1);
    ok = end == first + 1 && memcmp(stopped, cached, (size_t)end * sizeof(int)) == 0;
    fails += !ok;
    printf("%-4s stop token %d: generation ends at its first draw (length %d, expected %d)\n",
           ok ? "ok" : "FAIL", stop, end, first + 1);
    free(stopped);

    // 5. a second sequence that shares a prefix with the one held: its other
    //    rows run as one block after the kept ones (sample -I 1's prompts)
    const int n2 = maxT < 24 ? maxT : 24, shared = n2 / 3;
    int *first_seq = malloc_check((size_t)n2 * sizeof(int), "tokens");
    int *second_seq = malloc_check((size_t)n2 * sizeof(int), "tokens");
    for (int t = 0; t < n2; t++) {
        first_seq[t] = (int)(rng_u32(&rng) % (uint32_t)V);
        second_seq[t] = t < shared ? first_seq[t] : (int)(rng_u32(&rng) % (uint32_t)V);
    }
    kv_cache_forward(&cache, &model, first_seq, n2);
    const float *second = kv_cache_forward(&cache, &model, second_seq, n2);
    gpt2_forward(&model, second_seq, NULL, 1, n2);
    double err = relative_error(second, model.acts.logits + (size_t)(n2 - 1) * Vp, (size_t)V);
    ok = err <= tol;
    fails += !ok;
    printf("%-4s %d tokens sharing %d with the held ones: last logits max rel err %.2e (tol %.0e)\n",
           ok ? "ok" : "FAIL", n2, shared, err, tol);
    free(first_seq);
    free(second_seq);
    kv_cache_free(&cache);
    free(cached);
    free(full);
    free(logits);
    gpt2_free(&model);
    return fails;
}

int main(int argc, char **argv) {
    const char *out = NULL, *descriptor = "d2c64h4v256t64", *mode = "ln";
    int G = 100, P = 8;
    unsigned long long seed = 1;
    double tol = 1e-5;
    float eot_bias = 0.0f;
    CliFlag flags[] = {
        {"-g", CLI_INT, &G, 2, 1 << 20, "tokens to generate (default 100)", NULL, 0, 0},
        {"-pl", CLI_INT, &P, 1, 1 << 20, "prompt length, random tokens (default 8)", NULL, 0, 0},
        {"-sd", CLI_SEED, &seed, 0, 0, "seed (default 1)", NULL, 0, 0},
        {"-rt", CLI_DOUBLE, &tol, 0, 1, "relative tolerance of the logits (default 1e-5)", NULL,
         0, 0},
        {"-w", CLI_STRING, &out, 0, 0, "write a random model there instead of checking", "file",
         0, 0},
        {"-e", CLI_STRING, &descriptor, 0, 0, "-w: model shape (default d2c64h4v256t64)",
         "descriptor", 0, 0},
        {"-N", CLI_CHOICE, &mode, 0, 0, "-w: norm mode (default ln)", NORM_MODE_FLAG_WORDS, 0, 0},
        {"-eb", CLI_FLOAT, &eot_bias, -1000, 1000,
         "-w: the last token's logit, about (default 0: as drawn)", NULL,
         0, 0},
    };
    const char *positional[1] = {NULL};
    CliSpec spec = {.program = "test_kv_cache", .synopsis = "[options] MODEL.bin | -w OUT.bin",
                    .flags = flags, .num_flags = CLI_COUNT(flags), .min_positional = 0,
                    .max_positional = 1};
    int n = cli_parse(&spec, argc, argv, positional);
    if (out != NULL) {
        if (n != 0) cli_error(&spec, "-w writes a model; no MODEL.bin with it");
        write_random_model(out, descriptor, mode, seed, eot_bias);
        return EXIT_SUCCESS;
    }
    if (n != 1) cli_error(&spec, "a MODEL.bin to check is needed");
    int fails = check(positional[0], G, P, seed, tol);
    printf("test_kv_cache: %s\n", fails == 0 ? "all passed" : "FAILED");
    return fails == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
