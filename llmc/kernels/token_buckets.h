// Rows of a micro-batch grouped by token, for a wte gradient without atomics:
// bucket u holds the rows whose input token is token[u], listed in
// rows[start[u] .. start[u+1]) in increasing order; buckets come in the order
// of their token's first row. Built on the host in O(rows) (no sort), so that
// one GPU thread per (token, column) sums its rows in a fixed order.
#ifndef FOLDNORM_TOKEN_BUCKETS_H
#define FOLDNORM_TOKEN_BUCKETS_H

typedef struct {
    int vocab_size;
    int max_rows;
    int num_buckets;
    int *token; // (max_rows) the bucket's token
    int *start; // (max_rows + 1) the bucket's first entry in rows
    int *rows;  // (max_rows)
    int *slot;  // (vocab_size) scratch, all zero between builds
    int owns;   // token, start and rows were allocated here
} TokenBuckets;

void token_buckets_init(TokenBuckets *tb, int vocab_size, int max_rows);
// The same with token, start and rows in the caller's storage of
// 3 max_rows + 1 ints (e.g. page-locked, for the copy to a GPU); kept by
// token_buckets_free.
void token_buckets_init_at(TokenBuckets *tb, int vocab_size, int max_rows, int *storage);
// tokens: n <= max_rows ids in [0, vocab_size) (dies otherwise)
void token_buckets_build(TokenBuckets *tb, const int *tokens, int n);
void token_buckets_free(TokenBuckets *tb);

#endif
