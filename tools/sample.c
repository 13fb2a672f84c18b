// Generates text from a GPT-2 checkpoint (llm.c model file, V = 50257):
//   sample -e MODEL [-p PROMPT] [-g TOKENS] [-tp TEMPERATURE] [-tk TOP_K] [-sd SEED] [-vd DIR]
// The prompt follows <|endoftext|>; the same seed gives the same text.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpt2.h"
#include "rand.h"
#include "sampler.h"
#include "tokenizer.h"
#include "utils.h"

int main(int argc, char **argv) {
    const char *model_path = NULL, *prompt = "", *dir = "data/gpt2";
    int n = 64, top_k = 0;
    unsigned long long seed = 1337;
    float temperature = 1.0f;
    CliFlag flags[] = {
        {"-e", CLI_STRING, &model_path, 0, 0, "GPT-2 model file, llm.c format (required)", "file",
         0, 0},
        {"-p", CLI_STRING, &prompt, 0, 0, "prompt, after <|endoftext|> (default: none)", "text", 0,
         0},
        {"-g", CLI_INT, &n, 1, 1048576, "tokens to generate (default 64)", NULL, 0, 0},
        {"-tp", CLI_FLOAT, &temperature, 0, 100, "sampling temperature, 0 = greedy (default 1.0)", NULL,
         0, 0},
        {"-tk", CLI_INT, &top_k, 0, 2147483647, "sampling top-k, 0 = all (default 0)", NULL, 0, 0},
        {"-sd", CLI_SEED, &seed, 0, 0, "seed (default 1337)", NULL, 0, 0},
        {"-vd", CLI_STRING, &dir, 0, 0, "GPT-2 encoder.json and vocab.bpe (default data/gpt2)",
         "dir", 0, 0},
    };
    CliSpec spec = {.program = "sample", .synopsis = "-e MODEL [options]",
                    .about = "Generates text from a GPT-2 model file (V = 50257).\n",
                    .flags = flags, .num_flags = CLI_COUNT(flags)};
    cli_parse(&spec, argc, argv, NULL);
    if (model_path == NULL) {
        cli_error(&spec, "-e: a model file is needed");
    }
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
        fatal("prompt (%zu tokens) + -g %d exceeds the model's context of %d", ids.len - 1, n,
              model.config.max_seq_len);
    }
    int *tokens = malloc_check((size_t)total * sizeof(int), "tokens");
    for (size_t i = 0; i < ids.len; i++) tokens[i] = ids.ids[i];
    Rng rng;
    rng_seed(&rng, seed);
    generate_tokens(&model, tokens, (int)ids.len, total, temperature, top_k, &rng);
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
