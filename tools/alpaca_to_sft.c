// Stanford Alpaca-format JSON (a list of {"instruction", "input" (optional),
// "output"}) into SFT shards (docs/formats.md): each record becomes
//   <|endoftext|> PROMPT RESPONSE <|endoftext|>
// with the Alpaca prompt template (with or without input) and a loss mask of
// 1 on RESPONSE and its closing <|endoftext|> (the tokens the model must
// predict), 0 on the prompt.
//   alpaca_to_sft [-vd DIR] [-t MAX_TOKENS] INPUT.json OUT_PREFIX [VAL_RECORDS=1]
// writes OUT_PREFIX_train_000000.bin and, when VAL_RECORDS > 0, the last
// VAL_RECORDS records to OUT_PREFIX_val_000000.bin. A record longer than
// MAX_TOKENS (the context it will be trained at, default 1024) is an error,
// or with -sk 1 left out and counted.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/alpaca.h"
#include "core/atomic_write.h"
#include "core/cli.h"
#include "gpt2/dataloader.h"
#include "core/reader.h"
#include "text/tokenizer.h"
#include "core/utils.h"

typedef struct {
    TokenList tokens;
    uint8_t *mask;
    size_t mask_cap;
} SftData;

static void push(SftData *d, int32_t id, uint8_t m) {
    token_list_push(&d->tokens, id);
    if (d->tokens.len > d->mask_cap) {
        d->mask_cap = d->tokens.cap;
        uint8_t *grown = realloc(d->mask, d->mask_cap);
        if (grown == NULL) fatal("out of memory for the loss mask");
        d->mask = grown;
    }
    d->mask[d->tokens.len - 1] = m;
}

typedef struct {
    const SftData *data;
    size_t start, count;
} ShardSlice;

static void write_sft_shard(FILE *f, const char *path, const void *ctx) {
    const ShardSlice *s = ctx;
    int32_t header[256] = {0};
    header[0] = SFT_SHARD_MAGIC;
    header[1] = SFT_SHARD_VERSION;
    header[2] = (int32_t)s->count;
    fwrite_check(header, sizeof(int32_t), 256, f, path);
    for (size_t i = 0; i < s->count; i++) {
        uint16_t t = (uint16_t)s->data->tokens.ids[s->start + i];
        fwrite_check(&t, sizeof(uint16_t), 1, f, path);
    }
    fwrite_check(s->data->mask + s->start, 1, s->count, f, path);
}

static void write_split(const char *prefix, const char *split, const SftData *d, size_t start,
                        size_t count) {
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s_%s_000000.bin", prefix, split);
    if (n < 0 || (size_t)n >= sizeof(path)) fatal("output prefix too long: %s", prefix);
    ShardSlice s = {d, start, count};
    write_file_atomic(path, write_sft_shard, &s);
    size_t response = 0;
    for (size_t i = 0; i < count; i++) response += d->mask[start + i];
    printf("wrote %s: %zu tokens, %zu with loss (response)\n", path, count, response);
}

int main(int argc, char **argv) {
    const char *dir = NULL;
    int max_tokens = 1024, skip_long = 0;
    CliFlag flags[] = {
        {"-vd", CLI_STRING, &dir, 0, 0, "GPT-2's encoder.json and vocab.bpe (default data/gpt2)",
         "dir", 0, 0},
        {"-t", CLI_INT, &max_tokens, 2, 1048576,
         "context length the shards will be trained at; a longer record is an\n"
         "error (default 1024)", NULL, 0, 0},
        {"-sk", CLI_INT, &skip_long, 0, 1,
         "1: leave out the records longer than -t and say how many (default 0: error)",
         NULL, 0, 0},
    };
    CliSpec spec = {.program = "alpaca_to_sft",
                    .synopsis = "[-vd DIR] [-t MAX_TOKENS] INPUT.json OUT_PREFIX [VAL_RECORDS=1]",
                    .about = "Alpaca JSON into SFT shards OUT_PREFIX_train_000000.bin and, when\n"
                             "VAL_RECORDS > 0, the last VAL_RECORDS records in OUT_PREFIX_val_000000.bin.\n",
                    .flags = flags, .num_flags = CLI_COUNT(flags),
                    .min_positional = 2, .max_positional = 3};
    const char *args[3];
    int n_args = cli_parse(&spec, argc, argv, args);
    const char *path = args[0], *prefix = args[1];
    long val_records =
        n_args > 2 ? cli_positional_int(&spec, "VAL_RECORDS", args[2], 0, 2147483647L) : 1;
    unsigned char *text;
    size_t size;
    AlpacaData alpaca;
    char err[READER_ERR_BYTES];
    if (read_file_bytes(path, (size_t)1 << 32, &text, &size, err, sizeof(err)) != 0 ||
        alpaca_parse(&alpaca, (const char *)text, size, err, sizeof(err)) != 0) {
        fatal("%s: %s", path, err);
    }
    int records = alpaca.count;
    if (val_records >= records) {
        fatal("VAL_RECORDS %ld leaves no training record (%d records)", val_records, records);
    }
    Tokenizer tok;
    tokenizer_load(&tok, dir);
    SftData data = {0};
    size_t val_start = 0;
    int skipped = 0;
    for (int index = 0; index < records; index++) {
        const AlpacaRecord *r = &alpaca.records[index];
        char *prompt = alpaca_prompt(r);
        if (prompt == NULL) fatal("out of memory for the prompt of record %d", index);
        if (index == records - val_records) val_start = data.tokens.len;
        size_t before = data.tokens.len;
        TokenList part = {0};
        push(&data, tok.eot_token, 0);
        tokenizer_encode(&tok, (const unsigned char *)prompt, strlen(prompt), &part);
        for (size_t i = 0; i < part.len; i++) push(&data, part.ids[i], 0);
        part.len = 0;
        tokenizer_encode(&tok, (const unsigned char *)r->output, strlen(r->output), &part);
        for (size_t i = 0; i < part.len; i++) push(&data, part.ids[i], 1);
        push(&data, tok.eot_token, 1);
        token_list_free(&part);
        free(prompt);
        size_t length = data.tokens.len - before;
        if (length > (size_t)max_tokens && skip_long) {
            data.tokens.len = before; // the record's tokens and mask bytes are dropped
            skipped++;
        } else if (length > (size_t)max_tokens) {
            fatal("%s: record %d is %zu tokens, longer than the context of %d (-t)", path, index,
                  length, max_tokens);
        }
    }
    if (skipped > 0) {
        printf("%s: left out %d of %d records longer than %d tokens (-sk 1)\n", path, skipped,
               records, max_tokens);
    }
    size_t train_count = val_records > 0 ? val_start : data.tokens.len;
    write_split(prefix, "train", &data, 0, train_count);
    if (val_records > 0) {
        write_split(prefix, "val", &data, val_start, data.tokens.len - val_start);
    }
    printf("%s: %d records (%ld for val), %zu tokens\n", path, records, val_records,
           data.tokens.len);
    token_list_free(&data.tokens);
    free(data.mask);
    alpaca_free(&alpaca);
    free(text);
    tokenizer_free(&tok);
    return EXIT_SUCCESS;
}
