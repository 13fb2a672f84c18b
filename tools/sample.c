// Generates text from a GPT-2 checkpoint (llm.c model file, V = 50257):
//   sample -e MODEL [-p PROMPT] [-g TOKENS] [-tp TEMPERATURE] [-tk TOP_K] [-sd SEED] [-vd DIR]
//          [-kv 0|1] [-I 0|1] [-sft 0|1] [-ids 0|1]
// The prompt follows <|endoftext|>; the same seed gives the same text. With
// -I 1 every line of stdin is a prompt and gets its reply, as -p LINE would.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/alpaca.h"
#include "core/cli.h"
#include "gpt2/gpt2.h"
#include "gpt2/kv_cache.h"
#include "core/rand.h"
#include "gpt2/sampler.h"
#include "text/tokenizer.h"
#include "core/utils.h"

typedef struct {
    GPT2 *model;
    Tokenizer *tok;
    KVCache *cache; // NULL: full recompute
    int tokens_to_generate;
    float temperature;
    int top_k;
    unsigned long long seed;
    int sft;        // wrap prompts in the Alpaca template, stop at <|endoftext|>
    int print_ids;  // print the generated token ids instead of text
    int echo_prompt; // print the prompt's text before the generated text
} SampleRun;

static void write_bytes(const void *bytes, size_t len) {
    fwrite_check(bytes, 1, len, stdout, "stdout");
}

// <|endoftext|> then the prompt's tokens: the text itself, or with -sft the
// Alpaca template of an instruction without input (as alpaca_to_sft writes it).
static void encode_prompt(TokenList *ids, const SampleRun *run, const char *text) {
    ids->len = 0;
    token_list_push(ids, run->tok->eot_token);
    if (!run->sft) {
        tokenizer_encode(run->tok, (const unsigned char *)text, strlen(text), ids);
        return;
    }
    AlpacaRecord record = {.instruction = text, .input = "", .output = ""};
    char *prompt = alpaca_prompt(&record);
    if (prompt == NULL) {
        fatal("out of memory for the Alpaca prompt of %zu bytes", strlen(text));
    }
    tokenizer_encode(run->tok, (const unsigned char *)prompt, strlen(prompt), ids);
    free(prompt);
}

// Generates the reply to one prompt and prints it (the seed restarts per prompt).
static void sample_one(const SampleRun *run, const char *text) {
    TokenList ids = {0};
    encode_prompt(&ids, run, text);
    const int maxT = run->model->config.max_seq_len;
    if ((int)ids.len > maxT) {
        fprintf(stderr,
                "note: sample: the prompt is %zu tokens, longer than the context of %d; the "
                "model sees its last %d\n",
                ids.len, maxT, generate_window_keep(maxT));
    }
    const size_t total = ids.len + (size_t)run->tokens_to_generate;
    if (total > (size_t)(1 << 30)) {
        fatal("sample: the prompt (%zu tokens) and -g %d are too long", ids.len,
              run->tokens_to_generate);
    }
    int *tokens = malloc_check(total * sizeof(int), "tokens");
    for (size_t i = 0; i < ids.len; i++) tokens[i] = ids.ids[i];
    Rng rng;
    rng_seed(&rng, run->seed);
    GenerateOptions options = {.temperature = run->temperature, .top_k = run->top_k,
                               .stop_token = run->sft ? run->tok->eot_token : -1,
                               .cache = run->cache};
    int end = generate_text(run->model, tokens, (int)ids.len, (int)total, &options, &rng);
    // with -sft the closing <|endoftext|> ends the reply; it is not printed
    int shown_end = run->sft && end > (int)ids.len && tokens[end - 1] == run->tok->eot_token
                        ? end - 1 : end;
    if (run->print_ids) {
        for (int t = (int)ids.len; t < end; t++) {
            printf(t == (int)ids.len ? "%d" : " %d", tokens[t]);
        }
    } else {
        for (int t = run->echo_prompt ? 1 : (int)ids.len; t < shown_end; t++) {
            int len;
            const unsigned char *bytes = tokenizer_token(run->tok, tokens[t], &len);
            write_bytes(bytes, (size_t)len);
        }
    }
    printf("\n");
    if (fflush(stdout) != 0) {
        fatal("stdout: write failed: %s", strerror(errno));
    }
    free(tokens);
    token_list_free(&ids);
}

// Every line of stdin (the last may lack its newline; an empty line is the
// empty prompt) is a prompt; a reply line for each, until EOF.
static void sample_interactive(const SampleRun *run) {
    char *line = NULL;
    size_t cap = 0;
    long number = 0;
    for (;;) {
        errno = 0;
        ssize_t len = getline(&line, &cap, stdin);
        if (len < 0) {
            if (ferror(stdin)) {
                fatal("stdin: read error after line %ld: %s", number, strerror(errno));
            }
            break;
        }
        number++;
        if (memchr(line, '\0', (size_t)len) != NULL) {
            fatal("stdin: line %ld holds a NUL byte; prompts are text", number);
        }
        if (len > 0 && line[len - 1] == '\n') line[--len] = '\0';
        if (len > 0 && line[len - 1] == '\r') line[--len] = '\0';
        sample_one(run, line);
    }
    free(line);
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *prompt = "", *dir = "data/gpt2";
    int n = 64, top_k = 0, use_cache = 1, interactive = 0, sft = 0, print_ids = 0;
    unsigned long long seed = 1337;
    float temperature = 1.0f;
    CliFlag flags[] = {
        {"-e", CLI_STRING, &model_path, 0, 0, "GPT-2 model file, llm.c format (required)", "file",
         0, 0},
        {"-p", CLI_STRING, &prompt, 0, 0, "prompt, after <|endoftext|> (default: none)", "text", 0,
         0},
        {"-g", CLI_INT, &n, 1, 1048576, "tokens to generate per prompt (default 64)", NULL, 0, 0},
        {"-tp", CLI_FLOAT, &temperature, 0, 100, "sampling temperature, 0 = greedy (default 1.0)", NULL,
         0, 0},
        {"-tk", CLI_INT, &top_k, 0, 2147483647, "sampling top-k, 0 = all (default 0)", NULL, 0, 0},
        {"-sd", CLI_SEED, &seed, 0, 0, "seed, restarted for every prompt (default 1337)", NULL, 0,
         0},
        {"-vd", CLI_STRING, &dir, 0, 0, "GPT-2 encoder.json and vocab.bpe (default data/gpt2)",
         "dir", 0, 0},
        {"-kv", CLI_INT, &use_cache, 0, 1,
         "1: KV cache, each new token runs alone over the kept keys and values;\n"
         "0: recompute the whole context for every token (default 1)", NULL, 0, 0},
        {"-I", CLI_INT, &interactive, 0, 1,
         "1: read prompts from stdin, one a line, until EOF; print one reply line\n"
         "each (the generated text only), as -p LINE would generate it (default 0)", NULL, 0, 0},
        {"-sft", CLI_INT, &sft, 0, 1,
         "1: wrap each prompt in the Alpaca template fine-tuning uses (an instruction\n"
         "without input) and stop at <|endoftext|>, not printed (default 0)", NULL, 0, 0},
        {"-ids", CLI_INT, &print_ids, 0, 1,
         "1: print the generated token ids, space-separated, instead of text (with\n"
         "-sft 1 the closing <|endoftext|>'s id too) (default 0)", NULL, 0, 0},
    };
    CliSpec spec = {
        .program = "sample", .synopsis = "-e MODEL [options]",
        .about = "Generates text from a GPT-2 model file (V = 50257; ln, rms, cbwc or folded).\n",
        .footer = "The context holds the model's maxT tokens. When prompt and generated text\n"
                  "fill it, the oldest tokens are dropped: the context slides to its last\n"
                  "(maxT + 1) / 2 tokens (recomputed once at positions 0..) and grows again,\n"
                  "with -kv 1 and -kv 0 alike, so both give the same text; a prompt longer\n"
                  "than maxT is cut the same way (with a note on stderr).\n",
        .flags = flags, .num_flags = CLI_COUNT(flags)};
    cli_parse(&spec, argc, argv, NULL);
    if (model_path == NULL) {
        cli_error(&spec, "-e: a model file is needed");
    }
    if (interactive && cli_given(&spec, "-p")) {
        cli_error(&spec, "-p: not with -I 1 (the prompts come from stdin)");
    }
    GPT2 model;
    gpt2_load(&model, model_path);
    if (model.config.vocab_size != GPT2_EOT_TOKEN + 1) {
        fatal("%s: vocabulary of %d tokens; sample needs GPT-2's 50257", model_path,
              model.config.vocab_size);
    }
    Tokenizer tok;
    tokenizer_load(&tok, dir);
    KVCache cache;
    if (use_cache) {
        kv_cache_init(&cache, &model);
    }
    SampleRun run = {.model = &model, .tok = &tok, .cache = use_cache ? &cache : NULL,
                     .tokens_to_generate = n, .temperature = temperature, .top_k = top_k,
                     .seed = seed, .sft = sft, .print_ids = print_ids, .echo_prompt = !interactive};
    if (interactive) {
        sample_interactive(&run);
    } else {
        sample_one(&run, prompt);
    }
    if (use_cache) {
        kv_cache_free(&cache);
    }
    tokenizer_free(&tok);
    gpt2_free(&model);
    return EXIT_SUCCESS;
}
