#include "token_buckets.h"

#include <stdlib.h>

#include "core/utils.h"

void token_buckets_init_at(TokenBuckets *tb, int vocab_size, int max_rows, int *storage) {
    if (vocab_size <= 0 || max_rows <= 0) {
        fatal("token_buckets_init: vocab_size %d and max_rows %d must be positive", vocab_size,
              max_rows);
    }
    tb->vocab_size = vocab_size;
    tb->max_rows = max_rows;
    tb->num_buckets = 0;
    tb->token = storage;
    tb->start = storage + max_rows;
    tb->rows = storage + 2 * (size_t)max_rows + 1;
    tb->slot = calloc_check((size_t)vocab_size, sizeof(int), "token buckets");
    tb->owns = 0;
}

void token_buckets_init(TokenBuckets *tb, int vocab_size, int max_rows) {
    if (max_rows <= 0) fatal("token_buckets_init: max_rows %d must be positive", max_rows);
    int *storage = malloc_check((3 * (size_t)max_rows + 1) * sizeof(int), "token buckets");
    token_buckets_init_at(tb, vocab_size, max_rows, storage);
    tb->owns = 1;
}

void token_buckets_build(TokenBuckets *tb, const int *tokens, int n) {
    if (n < 0 || n > tb->max_rows) {
        fatal("token_buckets_build: %d rows, at most %d", n, tb->max_rows);
    }
    // count: slot[token] = rows with that token; a bucket opens at its first row
    int buckets = 0;
    for (int i = 0; i < n; i++) {
        const int t = tokens[i];
        if (t < 0 || t >= tb->vocab_size) {
            fatal("token_buckets_build: token %d at row %d outside [0, %d)", t, i, tb->vocab_size);
        }
        if (tb->slot[t]++ == 0) tb->token[buckets++] = t;
    }
    // prefix sums: slot[token] becomes the next free entry of its bucket
    tb->start[0] = 0;
    for (int u = 0; u < buckets; u++) {
        const int t = tb->token[u];
        tb->start[u + 1] = tb->start[u] + tb->slot[t];
        tb->slot[t] = tb->start[u];
    }
    for (int i = 0; i < n; i++) tb->rows[tb->slot[tokens[i]]++] = i;
    for (int u = 0; u < buckets; u++) tb->slot[tb->token[u]] = 0;
    tb->num_buckets = buckets;
}

void token_buckets_free(TokenBuckets *tb) {
    if (tb->owns) free(tb->token); // the one allocation of token, start and rows
    free(tb->slot);
    tb->token = tb->start = tb->rows = tb->slot = NULL;
}

size_t token_pieces_ints(int max_rows) {
    const size_t split = (size_t)max_rows / TOKEN_PIECE_ROWS + 1;
    return 2 * (size_t)max_rows + 1 + 2 * split + 1;
}

int token_pieces_max_slots(int max_rows) { return 2 * (max_rows / TOKEN_PIECE_ROWS) + 1; }

void token_pieces_init_at(TokenPieces *tp, int max_rows, int *storage) {
    if (max_rows <= 0) fatal("token_pieces_init_at: max_rows %d must be positive", max_rows);
    const size_t split = (size_t)max_rows / TOKEN_PIECE_ROWS + 1;
    tp->max_rows = max_rows;
    tp->num_pieces = tp->num_split = 0;
    tp->piece_start = storage;
    tp->piece_dest = storage + max_rows + 1;
    tp->split_token = tp->piece_dest + max_rows;
    tp->split_first = tp->split_token + split;
    tp->piece_start[0] = 0;
    tp->split_first[0] = 0;
}

void token_pieces_build(TokenPieces *tp, const TokenBuckets *tb) {
    if (tb->max_rows > tp->max_rows) {
        fatal("token_pieces_build: buckets of up to %d rows, room for %d", tb->max_rows,
              tp->max_rows);
    }
    int p = 0, g = 0, slot = 0;
    for (int u = 0; u < tb->num_buckets; u++) {
        const int e0 = tb->start[u], e1 = tb->start[u + 1];
        if (e1 - e0 <= TOKEN_PIECE_ROWS) { // one piece, straight into the token's row
            tp->piece_start[p] = e0;
            tp->piece_dest[p++] = tb->token[u];
            continue;
        }
        tp->split_token[g] = tb->token[u];
        tp->split_first[g++] = slot;
        for (int e = e0; e < e1; e += TOKEN_PIECE_ROWS) {
            tp->piece_start[p] = e;
            tp->piece_dest[p++] = -1 - slot++;
        }
    }
    tp->piece_start[p] = tb->start[tb->num_buckets];
    tp->split_first[g] = slot;
    tp->num_pieces = p;
    tp->num_split = g;
}
