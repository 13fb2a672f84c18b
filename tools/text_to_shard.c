// Turns a text file into llm.c token shards with one token per byte (V=256):
// PREFIX_val_000000.bin holds the last VAL_FRACTION of the text, the rest
// goes into PREFIX_train_NNNNNN.bin shards of at most SHARD_TOKENS tokens.
// Byte-level tokens keep the demo free of a tokenizer; real BPE shards come
// from the GPT-2 tokenizer.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataloader.h"
#include "utils.h"

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
    if (argc < 3 || argc > 5 || strcmp(argv[1], "-h") == 0) {
        fprintf(stderr, "usage: text_to_shard TEXT_FILE OUT_PREFIX [VAL_FRACTION=0.05] "
                        "[SHARD_TOKENS=100000000]\n");
        return argc >= 2 && strcmp(argv[1], "-h") == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
    }
    double val_fraction = argc > 3 ? atof(argv[3]) : 0.05;
    long shard_tokens = argc > 4 ? atol(argv[4]) : 100000000L;
    if (val_fraction <= 0.0 || val_fraction >= 1.0) {
        fatal("VAL_FRACTION must be in (0, 1), got %s", argv[3]);
    }
    if (shard_tokens <= 0 || shard_tokens > 2000000000L) {
        fatal("SHARD_TOKENS must be in [1, 2e9], got %s", argv[4]);
    }
    FILE *f = fopen_check(argv[1], "rb");
    long size = file_size_bytes(f, argv[1]);
    if (size <= 1) {
        fatal("%s: file is empty", argv[1]);
    }
    uint8_t *bytes = malloc_check((size_t)size, argv[1]);
    fread_check(bytes, 1, (size_t)size, f, argv[1], "the text");
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
        emit(argv[2], "train", index, tokens + start, n);
    }
    emit(argv[2], "val", 0, tokens + train_count, val_count);
    free(tokens);
    return EXIT_SUCCESS;
}
