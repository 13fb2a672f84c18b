// Turns a text file into llm.c token shards with one token per byte (V=256):
// PREFIX_val_000000.bin holds the last VAL_FRACTION of the text, the rest
// goes into PREFIX_train_NNNNNN.bin shards of at most SHARD_TOKENS tokens.
// Byte-level tokens keep the demo free of a tokenizer; real BPE shards come
// from the GPT-2 tokenizer.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "gpt2/dataloader.h"
#include "core/utils.h"

static void emit(const char *prefix, const char *split, int index, const uint16_t *tokens,
                 size_t count) {
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s_%s_%06d.bin", prefix, split, index);
    if (n < 0 || (size_t)n >= sizeof(path)) {
        fatal("output prefix too long: %s", prefix);
    }
    shard_write(path, tokens, count);
    printf("wrote %s (%zu tokens)\n", path, count);
}

int main(int argc, char **argv) {
    CliSpec spec = {.program = "text_to_shard",
                    .synopsis = "TEXT_FILE OUT_PREFIX [VAL_FRACTION=0.05] [SHARD_TOKENS=100000000]",
                    .about = "Byte-level token shards (V = 256) OUT_PREFIX_{train,val}_NNNNNN.bin.\n",
                    .min_positional = 2, .max_positional = 4};
    const char *args[4];
    int n_args = cli_parse(&spec, argc, argv, args);
    const char *text_path = args[0], *prefix = args[1];
    double val_fraction =
        n_args > 2 ? cli_positional_double(&spec, "VAL_FRACTION", args[2], 0.0, 1.0,
                                           CLI_OPEN_LO | CLI_OPEN_HI) : 0.05;
    long shard_tokens = n_args > 3
                            ? cli_positional_int(&spec, "SHARD_TOKENS", args[3], 1, 2000000000L)
                            : 100000000L;
    FILE *f = fopen_check(text_path, "rb");
    long size = file_size_bytes(f, text_path);
    if (size <= 1) {
        fatal("%s: file is empty", text_path);
    }
    uint8_t *bytes = malloc_check((size_t)size, text_path);
    fread_check(bytes, 1, (size_t)size, f, text_path, "the text");
    uint16_t *tokens = malloc_check((size_t)size * sizeof(uint16_t), "tokens");
    for (long i = 0; i < size; i++) {
        tokens[i] = bytes[i]; // one token per byte
    }
    free(bytes);
    fclose(f);
    size_t val_count = (size_t)((double)size * val_fraction);
    size_t train_count = (size_t)size - val_count;
    int index = 0;
    for (size_t start = 0; start < train_count; start += (size_t)shard_tokens, index++) {
        size_t n = train_count - start < (size_t)shard_tokens ? train_count - start
                                                              : (size_t)shard_tokens;
        emit(prefix, "train", index, tokens + start, n);
    }
    emit(prefix, "val", 0, tokens + train_count, val_count);
    free(tokens);
    return EXIT_SUCCESS;
}
