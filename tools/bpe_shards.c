// Tokenizes a text corpus with GPT-2's BPE into llm.c token shards:
//   bpe_shards [-vd DIR] TEXT OUT_PREFIX [VAL_FRACTION=0.05] [SHARD_TOKENS=1048576]
// TEXT holds documents separated by the literal "<|endoftext|>"; each
// document becomes <|endoftext|> (50256) followed by its tokens, as in
// llm.c's data scripts. The last VAL_FRACTION of the tokens goes to
// PREFIX_val_NNNNNN.bin, the rest to PREFIX_train_NNNNNN.bin, each shard
// SHARD_TOKENS tokens (the last of each split may be shorter). A progress
// line on stderr while it tokenizes.
#define _GNU_SOURCE // memmem
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "gpt2/dataloader.h"
#include "text/tokenizer.h"
#include "core/utils.h"

static int write_split(const char *prefix, const char *split, const uint16_t *tokens, size_t count,
                       size_t shard_tokens) {
    int index = 0;
    for (size_t start = 0; start < count; start += shard_tokens, index++) {
        char path[4096];
        int n = snprintf(path, sizeof(path), "%s_%s_%06d.bin", prefix, split, index);
        if (n < 0 || (size_t)n >= sizeof(path)) fatal("output prefix too long: %s", prefix);
        shard_write(path, tokens + start,
                    count - start < shard_tokens ? count - start : shard_tokens);
    }
    return index;
}

int main(int argc, char **argv) {
    const char *dir = NULL;
    CliFlag flags[] = {
        {"-vd", CLI_STRING, &dir, 0, 0, "GPT-2's encoder.json and vocab.bpe (default data/gpt2)",
         "dir", 0, 0},
    };
    CliSpec spec = {.program = "bpe_shards",
                    .synopsis = "[-vd DIR] TEXT OUT_PREFIX [VAL_FRACTION=0.05] [SHARD_TOKENS=1048576]",
                    .about = "GPT-2 BPE token shards OUT_PREFIX_{train,val}_NNNNNN.bin from a text\n"
                             "whose documents are separated by <|endoftext|>.\n",
                    .flags = flags, .num_flags = CLI_COUNT(flags),
                    .min_positional = 2, .max_positional = 4};
    const char *args[4];
    int n_args = cli_parse(&spec, argc, argv, args);
    const char *text_path = args[0], *prefix = args[1];
    double val_fraction =
        n_args > 2 ? cli_positional_double(&spec, "VAL_FRACTION", args[2], 0.0, 1.0,
                                           CLI_OPEN_LO | CLI_OPEN_HI) : 0.05;
    long shard_tokens = n_args > 3
                            ? cli_positional_int(&spec, "SHARD_TOKENS", args[3], 1, 2000000000L)
                            : 1048576L;
    Tokenizer tok;
    tokenizer_load(&tok, dir);
    FILE *f = fopen_check(text_path, "rb");
    long size = file_size_bytes(f, text_path);
    unsigned char *text = malloc_check((size_t)size + 1, text_path);
    fread_check(text, 1, (size_t)size, f, text_path, "the text");
    fclose(f);
    text[size] = '\0';

    static const char SEP[] = "<|endoftext|>";
    const size_t sep_len = sizeof(SEP) - 1;
    TokenList ids = {0};
    double t0 = now_seconds(), last_report = t0;
    size_t docs = 0;
    for (size_t pos = 0; pos < (size_t)size;) {
        unsigned char *hit = memmem(text + pos, (size_t)size - pos, SEP, sep_len);
        size_t doc_end = hit ? (size_t)(hit - text) : (size_t)size;
        if (doc_end > pos) {
            token_list_push(&ids, tok.eot_token);
            tokenizer_encode(&tok, text + pos, doc_end - pos, &ids);
            docs++;
        }
        pos = hit ? doc_end + sep_len : (size_t)size;
        double now = now_seconds();
        if (now - last_report > 0.5 || pos == (size_t)size) {
            fprintf(stderr, "\r%s: %.1f / %.1f MB, %zu documents, %zu tokens, %.1f MB/s  ",
                    text_path, pos / 1e6, size / 1e6, docs, ids.len, pos / 1e6 / (now - t0 + 1e-9));
            last_report = now;
        }
    }
    fprintf(stderr, "\n");
    if (ids.len < 2) fatal("%s: no text to tokenize", text_path);
    uint16_t *tokens = malloc_check(ids.len * sizeof(uint16_t), "tokens");
    for (size_t i = 0; i < ids.len; i++) {
        if (ids.ids[i] > UINT16_MAX) fatal("token %d does not fit a uint16 shard", ids.ids[i]);
        tokens[i] = (uint16_t)ids.ids[i];
    }
    size_t val_count = (size_t)((double)ids.len * val_fraction);
    if (val_count == 0) val_count = 1;
    size_t train_count = ids.len - val_count;
    int train_shards = write_split(prefix, "train", tokens, train_count, (size_t)shard_tokens);
    int val_shards =
        write_split(prefix, "val", tokens + train_count, val_count, (size_t)shard_tokens);
    printf("%s: %zu documents, %zu tokens -> %s_train_* (%zu tokens, %d shards), %s_val_* "
           "(%zu tokens, %d shards) in %.2f s\n",
           text_path, docs, ids.len, prefix, train_count, train_shards, prefix, val_count,
           val_shards, now_seconds() - t0);
    free(tokens);
    token_list_free(&ids);
    free(text);
    tokenizer_free(&tok);
    return EXIT_SUCCESS;
}
