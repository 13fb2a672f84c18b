#include "dataloader.h"

#include <glob.h>
#include <stdlib.h>
#include <string.h>

#include "utils.h"

uint16_t *shard_read(const char *path, size_t *num_tokens, size_t min_tokens, int vocab_size) {
    FILE *f = fopen_check(path, "rb");
    long file_bytes = file_size_bytes(f, path);
    int32_t header[256];
    fread_check(header, sizeof(int32_t), 256, f, path, "the shard header");
    if (header[0] != SHARD_MAGIC) {
        fatal("%s: not a token shard (magic %d, expected %d)", path, header[0], SHARD_MAGIC);
    }
    if (header[1] != SHARD_VERSION) {
        fatal("%s: shard version %d is not supported (expected %d)", path, header[1],
              SHARD_VERSION);
    }
    if (header[2] < 0) {
        fatal("%s: negative token count %d in the header", path, header[2]);
    }
    size_t n = (size_t)header[2];
    size_t expected = 256 * sizeof(int32_t) + n * sizeof(uint16_t);
    if ((size_t)file_bytes != expected) {
        fatal("%s: file is %ld bytes but its header announces %zu tokens (%zu bytes)%s", path,
              file_bytes, n, expected, (size_t)file_bytes < expected ? ": truncated" : "");
    }
    if (n < min_tokens) {
        fatal("%s: shard holds %zu tokens, fewer than the %zu one batch needs (B*T+1)", path, n,
              min_tokens);
    }
    uint16_t *tokens = malloc_check(n * sizeof(uint16_t), path);
    fread_check(tokens, sizeof(uint16_t), n, f, path, "the tokens");
    fclose(f);
    for (size_t i = 0; i < n; i++) {
        if (tokens[i] >= vocab_size) {
            fatal("%s: token %u at position %zu is outside the vocabulary (size %d)", path,
                  tokens[i], i, vocab_size);
        }
    }
    *num_tokens = n;
    return tokens;
}

static void load_shard(DataLoader *loader, int index) {
    free(loader->tokens);
    loader->shard_index = index;
    loader->position = 0;
    loader->tokens = shard_read(loader->paths[index], &loader->num_tokens,
                                (size_t)loader->B * loader->T + 1, loader->vocab_size);
}

void dataloader_init(DataLoader *loader, const char *pattern, int B, int T, int vocab_size) {
    memset(loader, 0, sizeof(*loader));
    loader->B = B;
    loader->T = T;
    loader->vocab_size = vocab_size;
    glob_t g;
    int rc = glob(pattern, 0, NULL, &g);
    if (rc != 0 || g.gl_pathc == 0) {
        fatal("no token shard matches '%s'", pattern);
    }
    loader->num_shards = (int)g.gl_pathc;
    loader->paths = malloc_check(g.gl_pathc * sizeof(char *), "shard list");
    for (size_t i = 0; i < g.gl_pathc; i++) {
        loader->paths[i] = malloc_check(strlen(g.gl_pathv[i]) + 1, "shard path");
        strcpy(loader->paths[i], g.gl_pathv[i]);
    }
    globfree(&g);
    // validate every shard up front so a bad one fails at start, not mid-run
    for (int i = 0; i < loader->num_shards; i++) {
        load_shard(loader, i);
        loader->total_tokens += loader->num_tokens;
    }
    loader->inputs = malloc_check((size_t)B * T * sizeof(int), "batch inputs");
    loader->targets = malloc_check((size_t)B * T * sizeof(int), "batch targets");
    dataloader_reset(loader);
}

void dataloader_reset(DataLoader *loader) {
    if (loader->shard_index != 0 || loader->tokens == NULL) {
        load_shard(loader, 0);
    }
    loader->position = 0;
}

void dataloader_seek(DataLoader *loader, int shard_index, size_t position) {
    if (shard_index < 0 || shard_index >= loader->num_shards) {
        fatal("cannot resume: checkpoint names shard %d but only %d shards match", shard_index,
              loader->num_shards);
    }
    if (shard_index != loader->shard_index) {
        load_shard(loader, shard_index);
    }
    if (position > loader->num_tokens) {
        fatal("cannot resume: position %zu is past the end of %s (%zu tokens)", position,
              loader->paths[shard_index], loader->num_tokens);
    }
    loader->position = position;
}

void dataloader_next_batch(DataLoader *loader) {
    size_t span = (size_t)loader->B * loader->T;
    if (loader->position + span + 1 > loader->num_tokens) {
        load_shard(loader, (loader->shard_index + 1) % loader->num_shards);
    }
    const uint16_t *src = loader->tokens + loader->position;
    for (size_t i = 0; i < span; i++) {
        loader->inputs[i] = src[i];
        loader->targets[i] = src[i + 1];
    }
    loader->position += span;
}

size_t dataloader_batches_per_epoch(const DataLoader *loader) {
    return loader->total_tokens / ((size_t)loader->B * loader->T + 1);
}

void dataloader_free(DataLoader *loader) {
    for (int i = 0; i < loader->num_shards; i++) {
        free(loader->paths[i]);
    }
    free(loader->paths);
    free(loader->tokens);
    free(loader->inputs);
    free(loader->targets);
    memset(loader, 0, sizeof(*loader));
}
