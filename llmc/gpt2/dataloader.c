#include "dataloader.h"

#include <glob.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_write.h"
#include "core/rand.h"
#include "core/utils.h"

static int shard_parse_body(Reader *r, Shard *out, size_t min_tokens, int vocab_size, char *err,
                            size_t err_bytes) {
    int32_t header[256];
    if (reader_read(r, header, sizeof(header), "the shard header", err, err_bytes) != 0) {
        return -1;
    }
    int sft = header[0] == SFT_SHARD_MAGIC;
    if (header[0] != SHARD_MAGIC && !sft) {
        return input_error(err, err_bytes,
                           "not a token shard (magic %d, expected %d, or %d for an SFT shard)",
                           header[0], SHARD_MAGIC, SFT_SHARD_MAGIC);
    }
    int version = sft ? SFT_SHARD_VERSION : SHARD_VERSION;
    if (header[1] != version) {
        return input_error(err, err_bytes, "shard version %d is not supported (expected %d)",
                           header[1], version);
    }
    if (header[2] < 0) {
        return input_error(err, err_bytes, "negative token count %d in the header", header[2]);
    }
    size_t n = (size_t)header[2]; // < 2^31, so the sizes below fit
    size_t per_token = sizeof(uint16_t) + (sft ? sizeof(uint8_t) : 0);
    size_t expected = 256 * sizeof(int32_t) + n * per_token;
    if (r->size != expected) {
        return input_error(err, err_bytes,
                           "file is %zu bytes but its header announces %zu tokens (%zu bytes)%s",
                           r->size, n, expected, r->size < expected ? ": truncated" : "");
    }
    if (n < min_tokens) {
        return input_error(err, err_bytes,
                           "shard holds %zu tokens, fewer than the %zu one batch needs (B*T+1)", n,
                           min_tokens);
    }
    out->tokens = malloc(n * sizeof(uint16_t) + 1);
    out->mask = sft ? malloc(n + 1) : NULL;
    if (out->tokens == NULL || (sft && out->mask == NULL)) {
        return input_error(err, err_bytes, "out of memory for %zu tokens", n);
    }
    if (reader_read(r, out->tokens, n * sizeof(uint16_t), "the tokens", err, err_bytes) != 0 ||
        (sft && reader_read(r, out->mask, n, "the loss mask", err, err_bytes) != 0)) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (out->tokens[i] >= vocab_size) {
            return input_error(err, err_bytes,
                               "token %u at position %zu is outside the vocabulary (size %d)",
                               out->tokens[i], i, vocab_size);
        }
        if (sft && out->mask[i] > 1) {
            return input_error(err, err_bytes, "loss mask %u at position %zu (expected 0 or 1)",
                               out->mask[i], i);
        }
    }
    out->num_tokens = n;
    return 0;
}

int shard_parse(Reader *r, Shard *out, size_t min_tokens, int vocab_size, char *err,
                size_t err_bytes) {
    memset(out, 0, sizeof(*out));
    if (shard_parse_body(r, out, min_tokens, vocab_size, err, err_bytes) != 0) {
        shard_free(out);
        return -1;
    }
    return 0;
}

void shard_free(Shard *shard) {
    free(shard->tokens);
    free(shard->mask);
    memset(shard, 0, sizeof(*shard));
}

uint16_t *shard_read(const char *path, size_t *num_tokens, uint8_t **mask, size_t min_tokens,
                     int vocab_size) {
    FILE *f = fopen_check(path, "rb");
    Reader r;
    Shard shard;
    char err[READER_ERR_BYTES];
    if (reader_init_file(&r, f, err, sizeof(err)) != 0 ||
        shard_parse(&r, &shard, min_tokens, vocab_size, err, sizeof(err)) != 0) {
        fatal("%s: %s", path, err);
    }
    fclose(f);
    *num_tokens = shard.num_tokens;
    *mask = shard.mask;
    return shard.tokens;
}

static uint64_t mix_seed(uint64_t seed, uint64_t a, uint64_t b) {
    return seed ^ (a + 1) * 0x9E3779B97F4A7C15ull ^ (b + 1) * 0xC2B2AE3D27D4EB4Full;
}

// Fisher-Yates with a generator seeded from (seed, a, b); identity if !shuffle.
static void fill_order_int(int *order, int n, int shuffle, uint64_t seed) {
    for (int i = 0; i < n; i++) order[i] = i;
    if (!shuffle) return;
    Rng rng;
    rng_seed(&rng, seed);
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(rng_u32(&rng) % (uint32_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

static void fill_order_size(size_t *order, size_t n, int shuffle, uint64_t seed) {
    for (size_t i = 0; i < n; i++) order[i] = i;
    if (!shuffle) return;
    Rng rng;
    rng_seed(&rng, seed);
    for (size_t i = n - 1; i > 0 && n > 1; i--) {
        uint64_t r = ((uint64_t)rng_u32(&rng) << 32) | rng_u32(&rng);
        size_t j = (size_t)(r % (uint64_t)(i + 1));
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

// Batches rank gets from a shard of n tokens: its share of the B-sample
// batches, the same for every rank (the last batches % world are left out),
// so the ranks move to the next shard together and a step reads the shard's
// samples [k world B, (k + 1) world B) whatever the split of world x B.
static size_t rank_batches(const DataLoader *loader, size_t n) {
    size_t batches = (n - 1) / (size_t)loader->T / (size_t)loader->B;
    return batches / (size_t)loader->world;
}

static void load_current_shard(DataLoader *loader) {
    int index = loader->shard_order[loader->shard_cursor];
    free(loader->tokens);
    free(loader->mask);
    free(loader->sample_order);
    loader->shard_index = index;
    loader->tokens = shard_read(loader->paths[index], &loader->num_tokens, &loader->mask,
                                (size_t)loader->B * loader->T + 1, loader->vocab_size);
    size_t samples = (loader->num_tokens - 1) / (size_t)loader->T;
    loader->sample_order = malloc_check(samples * sizeof(size_t), "sample order");
    fill_order_size(loader->sample_order, samples, loader->shuffle,
                    mix_seed(loader->seed, (uint64_t)loader->epoch, (uint64_t)index));
    loader->batches_in_shard = rank_batches(loader, loader->num_tokens);
}

static void start_epoch(DataLoader *loader, int epoch) {
    loader->epoch = epoch;
    fill_order_int(loader->shard_order, loader->num_shards, loader->shuffle,
                   mix_seed(loader->seed, (uint64_t)epoch, UINT64_MAX - 1));
}

void dataloader_init(DataLoader *loader, const char *pattern, int B, int T, int vocab_size,
                     int rank, int world, int shuffle, uint64_t seed) {
    memset(loader, 0, sizeof(*loader));
    if (world < 1 || rank < 0 || rank >= world) {
        fatal("data loader: rank %d is not in [0, world size %d)", rank, world);
    }
    loader->B = B;
    loader->T = T;
    loader->vocab_size = vocab_size;
    loader->rank = rank;
    loader->world = world;
    loader->shuffle = shuffle;
    loader->seed = seed;
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
    loader->shard_tokens = malloc_check((size_t)loader->num_shards * sizeof(size_t), "shards");
    // validate every shard up front so a bad one fails at start, not mid-run
    for (int i = 0; i < loader->num_shards; i++) {
        size_t n;
        uint8_t *mask;
        uint16_t *tokens = shard_read(loader->paths[i], &n, &mask, (size_t)B * T + 1, vocab_size);
        if (i > 0 && (mask != NULL) != loader->is_sft) {
            fatal("%s: an %s shard among %s shards ('%s')", loader->paths[i],
                  mask ? "SFT" : "plain token", loader->is_sft ? "SFT" : "plain token", pattern);
        }
        loader->is_sft = mask != NULL;
        if (rank_batches(loader, n) == 0) {
            fatal("%s: %zu tokens make %zu batches of B*T = %d, too few for %d ranks",
                  loader->paths[i], n, (n - 1) / (size_t)T / (size_t)B, B * T, world);
        }
        loader->shard_tokens[i] = n;
        loader->total_tokens += n;
        free(tokens);
        free(mask);
    }
    loader->shard_order = malloc_check((size_t)loader->num_shards * sizeof(int), "shard order");
    loader->inputs = malloc_check((size_t)B * T * sizeof(int), "batch inputs");
    loader->targets = malloc_check((size_t)B * T * sizeof(int), "batch targets");
    dataloader_reset(loader);
}

void dataloader_reset(DataLoader *loader) {
    dataloader_seek(loader, 0, 0, 0);
}

void dataloader_seek(DataLoader *loader, int epoch, int shard_cursor, size_t batch_cursor) {
    if (epoch < 0 || shard_cursor < 0 || shard_cursor >= loader->num_shards) {
        fatal("cannot resume: data position (epoch %d, shard %d) is out of range (%d shards)",
              epoch, shard_cursor, loader->num_shards);
    }
    int same =
        loader->tokens != NULL && epoch == loader->epoch && shard_cursor == loader->shard_cursor;
    if (!same) {
        start_epoch(loader, epoch);
        loader->shard_cursor = shard_cursor;
        load_current_shard(loader);
    }
    if (batch_cursor > loader->batches_in_shard) {
        fatal("cannot resume: batch %zu is past the end of %s (%zu batches)", batch_cursor,
              loader->paths[loader->shard_index], loader->batches_in_shard);
    }
    loader->batch_cursor = batch_cursor;
}

void dataloader_next_batch(DataLoader *loader) {
    while (loader->batch_cursor >= loader->batches_in_shard) {
        loader->shard_cursor++;
        if (loader->shard_cursor == loader->num_shards) {
            start_epoch(loader, loader->epoch + 1);
            loader->shard_cursor = 0;
        }
        load_current_shard(loader);
        loader->batch_cursor = 0;
    }
    const int B = loader->B, T = loader->T;
    // this rank's batch k of the shard is the shard's batch k * world + rank
    size_t first = (loader->batch_cursor * (size_t)loader->world + (size_t)loader->rank) * B;
    for (int b = 0; b < B; b++) {
        size_t start = loader->sample_order[first + (size_t)b] * (size_t)T;
        const uint16_t *src = loader->tokens + start;
        int *in = loader->inputs + (size_t)b * T, *out = loader->targets + (size_t)b * T;
        for (int t = 0; t < T; t++) {
            in[t] = src[t];
            out[t] = src[t + 1];
        }
        if (loader->mask != NULL) {
            const uint8_t *m = loader->mask + start;
            for (int t = 0; t < T; t++) {
                out[t] = m[t + 1] ? out[t] : -1; // a prompt token: no loss
            }
        }
    }
    loader->batch_cursor++;
}

size_t dataloader_batches_per_epoch(const DataLoader *loader) {
    size_t total = 0;
    for (int i = 0; i < loader->num_shards; i++) {
        total += rank_batches(loader, loader->shard_tokens[i]);
    }
    return total;
}

void dataloader_free(DataLoader *loader) {
    for (int i = 0; i < loader->num_shards; i++) {
        free(loader->paths[i]);
    }
    free(loader->paths);
    free(loader->shard_tokens);
    free(loader->shard_order);
    free(loader->tokens);
    free(loader->mask);
    free(loader->sample_order);
    free(loader->inputs);
    free(loader->targets);
    memset(loader, 0, sizeof(*loader));
}

typedef struct {
    const uint16_t *tokens;
    size_t count;
} ShardContent;

static void write_shard_file(FILE *f, const char *path, const void *ctx) {
    const ShardContent *c = ctx;
    int32_t header[256] = {0};
    header[0] = SHARD_MAGIC;
    header[1] = SHARD_VERSION;
    header[2] = (int32_t)c->count;
    fwrite_check(header, sizeof(int32_t), 256, f, path);
    fwrite_check(c->tokens, sizeof(uint16_t), c->count, f, path);
}

void shard_write(const char *path, const uint16_t *tokens, size_t n) {
    if (n > INT32_MAX) {
        fatal("%s: %zu tokens do not fit one shard (header count is int32)", path, n);
    }
    ShardContent c = {tokens, n};
    write_file_atomic(path, write_shard_file, &c);
}
