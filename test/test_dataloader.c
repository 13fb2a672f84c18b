// Data loader checks on shards it writes itself (token value = global
// position, so every served token names where it came from):
//   every input token is served exactly once per epoch (1 rank and 3 ranks
//   together, rank slices disjoint); same seed -> same order, another seed
//   -> another; shuffled order differs from sequential and between epochs;
//   save/restore of (epoch, shard, batch) resumes at the same token; SFT
//   shards give -1 targets exactly where the mask is 0.
//   test_dataloader WORKDIR SEED
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "gpt2/dataloader.h"
#include "core/rand.h"
#include "core/utils.h"

#define B 4
#define T 8
#define VOCAB 65535

static int failures = 0;
static void check(int ok, const char *what) {
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    failures += !ok;
}

static void write_shard(const char *path, uint32_t first, size_t n, const uint8_t *mask) {
    FILE *f = fopen_check(path, "wb");
    int32_t h[256] = {0};
    h[0] = mask ? SFT_SHARD_MAGIC : SHARD_MAGIC;
    h[1] = 1;
    h[2] = (int32_t)n;
    fwrite_check(h, sizeof(int32_t), 256, f, path);
    for (size_t i = 0; i < n; i++) {
        uint16_t t = (uint16_t)(first + i);
        fwrite_check(&t, 2, 1, f, path);
    }
    if (mask) fwrite_check(mask, 1, n, f, path);
    fclose_check(f, path);
}

// Serves one epoch (batches_per_epoch batches) and counts each input token.
static void serve_epoch(DataLoader *l, int *counts, int *sequence) {
    size_t nb = dataloader_batches_per_epoch(l);
    for (size_t k = 0; k < nb; k++) {
        dataloader_next_batch(l);
        for (int i = 0; i < B * T; i++) {
            counts[l->inputs[i]]++;
            if (l->targets[i] != l->inputs[i] + 1) failures++, printf("FAIL target != input + 1\n");
            if (sequence) sequence[k * B * T + (size_t)i] = l->inputs[i];
        }
    }
}

int main(int argc, char **argv) {
    CliSpec spec = {.program = "test_dataloader", .synopsis = "WORKDIR SEED",
                    .about = "Writes token shards into WORKDIR and checks the data loader on them.\n",
                    .min_positional = 2, .max_positional = 2};
    const char *args[2];
    cli_parse(&spec, argc, argv, args);
    const char *dir = args[0];
    uint64_t seed = (uint64_t)cli_positional_int(&spec, "SEED", args[1], 0, LONG_MAX);
    Rng rng;
    rng_seed(&rng, seed);
    // shards whose samples split evenly into batches for 1 and 3 ranks
    char path[4096], pattern[4096];
    int sizes[3];
    uint32_t first = 0;
    size_t total_inputs = 0;
    int *expected = calloc_check(VOCAB, sizeof(int), "expected");
    for (int s = 0; s < 3; s++) {
        sizes[s] = 3 * (2 + (int)(rng_u32(&rng) % 8)) * B * T + 1;
        snprintf(path, sizeof(path), "%s/dl_%d.bin", dir, s);
        write_shard(path, first, (size_t)sizes[s], NULL);
        for (int i = 0; i < sizes[s] - 1; i++) expected[first + i] = 1;
        first += (uint32_t)sizes[s];
        total_inputs += (size_t)sizes[s] - 1;
    }
    printf("shards of %d, %d, %d tokens, B=%d T=%d, seed %llu\n", sizes[0], sizes[1], sizes[2], B,
           T, (unsigned long long)seed);
    snprintf(pattern, sizeof(pattern), "%s/dl_*.bin", dir);
    size_t seq_len = total_inputs;
    int *counts = calloc_check(VOCAB, sizeof(int), "counts");
    int *seq_a = malloc_check(seq_len * sizeof(int), "seq"),
        *seq_b = malloc_check(seq_len * sizeof(int), "seq");
    int *seq_c = malloc_check(seq_len * sizeof(int), "seq"),
        *seq_d = malloc_check(seq_len * sizeof(int), "seq");

    // 1. one rank, shuffled: every input token exactly once per epoch, two epochs
    DataLoader l;
    dataloader_init(&l, pattern, B, T, VOCAB, 0, 1, 1, seed);
    check(dataloader_batches_per_epoch(&l) * B * T == total_inputs,
          "batches per epoch cover the inputs");
    for (int epoch = 0; epoch < 2; epoch++) {
        memset(counts, 0, VOCAB * sizeof(int));
        serve_epoch(&l, counts, epoch == 0 ? seq_a : seq_c);
        check(memcmp(counts, expected, VOCAB * sizeof(int)) == 0,
              epoch == 0 ? "epoch 1: every input token served exactly once"
                         : "epoch 2: every input token served exactly once");
    }
    check(memcmp(seq_a, seq_c, seq_len * sizeof(int)) != 0,
          "epoch 2's order differs from epoch 1's");
    dataloader_free(&l);

    // 2. same seed -> same order; another seed -> another; no shuffle -> sequential
    dataloader_init(&l, pattern, B, T, VOCAB, 0, 1, 1, seed);
    memset(counts, 0, VOCAB * sizeof(int));
    serve_epoch(&l, counts, seq_b);
    check(memcmp(seq_a, seq_b, seq_len * sizeof(int)) == 0, "same seed: same order");
    dataloader_free(&l);
    dataloader_init(&l, pattern, B, T, VOCAB, 0, 1, 1, seed + 1);
    serve_epoch(&l, counts, seq_b);
    check(memcmp(seq_a, seq_b, seq_len * sizeof(int)) != 0, "another seed: another order");
    dataloader_free(&l);
    dataloader_init(&l, pattern, B, T, VOCAB, 0, 1, 0, seed);
    serve_epoch(&l, counts, seq_b);
    int sequential = 1;
    for (size_t i = 0; i < seq_len; i++) {
        int shard = 0;
        size_t off = i;
        while (off >= (size_t)sizes[shard] - 1) off -= (size_t)sizes[shard++] - 1;
        size_t base = 0;
        for (int s = 0; s < shard; s++) base += (size_t)sizes[s];
        sequential &= seq_b[i] == (int)(base + off);
    }
    check(sequential, "no shuffle: shards and samples in order");
    check(memcmp(seq_a, seq_b, seq_len * sizeof(int)) != 0,
          "shuffled order differs from sequential");
    dataloader_free(&l);

    // 3. three ranks: disjoint slices that together cover every input once
    memset(counts, 0, VOCAB * sizeof(int));
    int overlap = 0;
    for (int r = 0; r < 3; r++) {
        int *mine = calloc_check(VOCAB, sizeof(int), "rank counts");
        dataloader_init(&l, pattern, B, T, VOCAB, r, 3, 1, seed);
        serve_epoch(&l, mine, NULL);
        for (int v = 0; v < VOCAB; v++) {
            overlap += mine[v] && counts[v];
            counts[v] += mine[v];
        }
        dataloader_free(&l);
        free(mine);
    }
    check(overlap == 0, "3 ranks: slices are disjoint");
    check(memcmp(counts, expected, VOCAB * sizeof(int)) == 0, "3 ranks: together every input once");

    // 4. save/restore mid-run (across an epoch boundary) resumes at the same token
    size_t per_epoch = seq_len / (B * T);
    size_t stop = per_epoch + 1 + rng_u32(&rng) % (per_epoch - 1);
    dataloader_init(&l, pattern, B, T, VOCAB, 0, 1, 1, seed);
    for (size_t k = 0; k < stop; k++) dataloader_next_batch(&l);
    int epoch = l.epoch, shard_cursor = l.shard_cursor;
    size_t batch_cursor = l.batch_cursor;
    for (size_t k = 0; k < 5; k++) {
        dataloader_next_batch(&l);
        memcpy(seq_d + k * B * T, l.inputs, B * T * sizeof(int));
    }
    dataloader_free(&l);
    dataloader_init(&l, pattern, B, T, VOCAB, 0, 1, 1, seed);
    dataloader_seek(&l, epoch, shard_cursor, batch_cursor);
    int same = 1;
    for (size_t k = 0; k < 5; k++) {
        dataloader_next_batch(&l);
        same &= memcmp(seq_d + k * B * T, l.inputs, B * T * sizeof(int)) == 0;
    }
    printf("     saved at batch %zu: epoch %d shard %d batch %zu\n", stop, epoch, shard_cursor,
           batch_cursor);
    check(same, "restored position serves the same next 5 batches");
    dataloader_free(&l);

    // 5. SFT shard: target -1 exactly where the mask of the target token is 0
    size_t n = 2 * B * T + 1;
    uint8_t *mask = malloc_check(n, "mask");
    for (size_t i = 0; i < n; i++) mask[i] = (uint8_t)(rng_u32(&rng) & 1);
    snprintf(path, sizeof(path), "%s/sft_0.bin", dir);
    write_shard(path, 0, n, mask);
    snprintf(pattern, sizeof(pattern), "%s/sft_*.bin", dir);
    dataloader_init(&l, pattern, B, T, VOCAB, 0, 1, 0, seed);
    int mask_ok = l.is_sft;
    for (int k = 0; k < 2; k++) {
        dataloader_next_batch(&l);
        for (int i = 0; i < B * T; i++) {
            int next = l.inputs[i] + 1;
            mask_ok &= l.targets[i] == (mask[next] ? next : -1);
        }
    }
    check(mask_ok, "SFT shard: targets -1 exactly on masked (prompt) tokens");
    dataloader_free(&l);
    free(mask);
    free(expected);
    free(counts);
    free(seq_a);
    free(seq_b);
    free(seq_c);
    free(seq_d);
    printf("%d failed\n", failures);
    return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
