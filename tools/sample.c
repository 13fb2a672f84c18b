// Generates text from a GPT-2 checkpoint (llm.c model file, V = 50257):
//   sample -e MODEL [-p PROMPT] [-n TOKENS] [-tp TEMPERATURE] [-tk TOP_K] [-sd SEED] [-vd DIR]
// The prompt follows <|endoftext|>; the same seed gives the same text.
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2.h"
#include "rand.h"
#include "sampler.h"
#include "tokenizer.h"
#include "utils.h"

static void usage(void) {
    fprintf(stderr, "usage: sample -e MODEL [-p PROMPT] [-n TOKENS=64] [-tp TEMPERATURE=1.0]\n"
                    "              [-tk TOP_K=0 (all)] [-sd SEED=1337] [-vd DIR=data/gpt2]\n");
}

static long parse_long(const char *flag, const char *v) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno != 0 || *end != '\0') fatal("%s: expected an integer, got '%s'", flag, v);
    return x;
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *prompt = "", *dir = "data/gpt2";
    long n = 64, top_k = 0, seed = 1337;
    float temperature = 1.0f;
    for (int i = 1; i < argc; i += 2) {
        const char *f = argv[i];
        if (strcmp(f, "-h") == 0) {
            usage();
            return EXIT_SUCCESS;
        }
        if (i + 1 >= argc) fatal("%s: missing value", f);
        const char *v = argv[i + 1];
        if (strcmp(f, "-e") == 0)
            model_path = v;
        else if (strcmp(f, "-p") == 0)
            prompt = v;
        else if (strcmp(f, "-n") == 0)
            n = parse_long(f, v);
        else if (strcmp(f, "-tk") == 0)
            top_k = parse_long(f, v);
        else if (strcmp(f, "-sd") == 0)
            seed = parse_long(f, v);
        else if (strcmp(f, "-vd") == 0)
            dir = v;
        else if (strcmp(f, "-tp") == 0) {
            char *end;
            temperature = strtof(v, &end);
            if (*end != '\0' || !isfinite(temperature))
                fatal("-tp: expected a number, got '%s'", v);
        } else {
            usage();
            fatal("unknown flag '%s'", f);
        }
    }
    if (model_path == NULL) {
        usage();
        fatal("-e: a model file is needed");
    }
    if (n < 1) fatal("-n: expected at least 1 token, got %ld", n);
    GPT2 model;
    gpt2_load(&model, model_path);
    if (model.config.vocab_size != GPT2_EOT_TOKEN + 1) {
        fatal("%s: vocabulary of %d tokens; sample needs GPT-2's 50257", model_path,
              model.config.vocab_size);
    }
    Tokenizer tok;
    tokenizer_load(&tok, dir);
    TokenList ids = {0};
    token_list_push(&ids, tok.eot_token);
    tokenizer_encode(&tok, (const unsigned char *)prompt, strlen(prompt), &ids);
    int total = (int)ids.len + (int)n;
    if (total > model.config.max_seq_len) {
        fatal("prompt (%zu tokens) + -n %ld exceeds the model's context of %d", ids.len - 1, n,
              model.config.max_seq_len);
    }
    int *tokens = malloc_check((size_t)total * sizeof(int), "tokens");
    for (size_t i = 0; i < ids.len; i++) tokens[i] = ids.ids[i];
    Rng rng;
    rng_seed(&rng, (uint64_t)seed);
    generate_tokens(&model, tokens, (int)ids.len, total, temperature, (int)top_k, &rng);
    for (int t = 1; t < total; t++) {
        int len;
        const unsigned char *bytes = tokenizer_token(&tok, tokens[t], &len);
        fwrite_check(bytes, 1, (size_t)len, stdout, "stdout");
    }
    printf("\n");
    free(tokens);
    token_list_free(&ids);
    tokenizer_free(&tok);
    gpt2_free(&model);
    return EXIT_SUCCESS;
}
