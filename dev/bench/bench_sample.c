// Generation speed with and without the KV cache (llmc/gpt2/kv_cache.c): greedy
// generation of G tokens after a random prompt of P tokens on one random-init
// model, by full recompute of the context for every token (sample -kv 0) and
// with the cache (sample -kv 1, the prompt run once as a block, then one
// token at a time). Tokens/s = G / wall time of the whole generation, the
// prompt's forward included; the process CPU time is printed beside it (on a
// shared machine the wall time also counts other processes). Both runs must
// produce the same tokens (checked; test_kv_cache checks the logits).
//
// usage: bench_sample [-e DESCRIPTOR] [-N ln|rms|cbwc] [-pl P] [-g G] [-sd SEED]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cli.h"
#include "gpt2/gpt2.h"
#include "gpt2/kv_cache.h"
#include "kernels/matmul.h"
#include "core/rand.h"
#include "gpt2/sampler.h"
#include "core/utils.h"

static double process_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// Greedy generation into tokens (prompt filled); prints and returns tokens/s.
static double timed_generation(GPT2 *model, KVCache *cache, int *tokens, int P, int G,
                               const char *label) {
    GenerateOptions options = {.temperature = 0.0f, .stop_token = -1, .cache = cache};
    Rng rng;
    rng_seed(&rng, 0);
    if (cache != NULL) {
        kv_cache_clear(cache);
    }
    double wall0 = now_seconds(), cpu0 = process_cpu_seconds();
    generate_text(model, tokens, P, P + G, &options, &rng);
    double wall = now_seconds() - wall0, cpu = process_cpu_seconds() - cpu0;
    printf("| %-22s | %5d | %5d | %9.2f | %9.2f | %8.2f |\n", label, P, G, wall, cpu,
           (double)G / wall);
    fflush(stdout);
    return (double)G / wall;
}

int main(int argc, char **argv) {
    const char *descriptor = "d12", *mode_name = "ln";
    int P = 64, G = 256;
    unsigned long long seed = 1;
    CliFlag flags[] = {
        {"-e", CLI_STRING, &descriptor, 0, 0, "model descriptor, random init (default d12)",
         "descriptor", 0, 0},
        {"-N", CLI_CHOICE, &mode_name, 0, 0, "norm mode (default ln)", NORM_MODE_FLAG_WORDS, 0, 0},
        {"-pl", CLI_INT, &P, 1, 1 << 20, "prompt length, random tokens (default 64)", NULL, 0, 0},
        {"-g", CLI_INT, &G, 1, 1 << 20, "tokens to generate (default 256)", NULL, 0, 0},
        {"-sd", CLI_SEED, &seed, 0, 0, "seed of the weights and the prompt (default 1)", NULL, 0,
         0},
    };
    CliSpec spec = {.program = "bench_sample", .synopsis = "[options]",
                    .about = "Tokens/s of greedy generation with and without the KV cache.\n",
                    .flags = flags, .num_flags = CLI_COUNT(flags)};
    cli_parse(&spec, argc, argv, NULL);
    GPT2Config config;
    NormMode mode;
    if (gpt2_parse_descriptor(descriptor, &config) != 0 || gpt2_config_error(&config) != NULL) {
        cli_error(&spec, "-e %s: not a model descriptor (d12, d4c128h4v256t256, ...)",
                  descriptor);
    }
    norm_mode_parse(mode_name, &mode);
    if (P + G > config.max_seq_len) {
        cli_error(&spec, "-pl %d + -g %d: more than the context of %d (the bench times no window slides)",
                  P, G, config.max_seq_len);
    }
    GPT2 model;
    gpt2_init_random(&model, &config, mode, seed);
    int *full = malloc_check((size_t)(P + G) * sizeof(int), "tokens");
    int *cached = malloc_check((size_t)(P + G) * sizeof(int), "tokens");
    Rng rng;
    rng_seed(&rng, seed + 1);
    for (int t = 0; t < P; t++) {
        full[t] = cached[t] = (int)(rng_u32(&rng) % (uint32_t)config.vocab_size);
    }
    KVCache cache;
    kv_cache_init(&cache, &model);
    printf("bench_sample: %s (L=%d C=%d NH=%d V=%d maxT=%d), mode %s, matmul %s, greedy\n",
           descriptor, config.num_layers, config.channels, config.num_heads, config.vocab_size,
           config.max_seq_len, mode_name, matmul_backend_name());
    printf("| %-22s | %5s | %5s | %9s | %9s | %8s |\n", "generation", "P", "G", "wall s",
           "cpu s", "tokens/s");
    printf("|------------------------|-------|-------|-----------|-----------|----------|\n");
    double with_cache = timed_generation(&model, &cache, cached, P, G, "KV cache (-kv 1)");
    double without = timed_generation(&model, NULL, full, P, G, "full recompute (-kv 0)");
    printf("speedup %.1fx\n", with_cache / without);
    int same = memcmp(full, cached, (size_t)(P + G) * sizeof(int)) == 0;
    printf("tokens: %s\n", same ? "the same both ways" : "DIFFER");
    kv_cache_free(&cache);
    free(full);
    free(cached);
    gpt2_free(&model);
    return same ? EXIT_SUCCESS : EXIT_FAILURE;
}
