// Rows of a micro-batch grouped by token, for a wte gradient without atomics:
// bucket u holds the rows whose input token is token[u], listed in
// rows[start[u] .. start[u+1]) in increasing order; buckets come in the order
// of their token's first row. Built on the host in O(rows) (no sort), so that
// one GPU thread per (token, column) sums its rows in a fixed order.
#ifndef FOLDNORM_TOKEN_BUCKETS_H
#define FOLDNORM_TOKEN_BUCKETS_H

#include <stddef.h>

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

// The GPU's wte gradient sums a bucket in pieces of at most this many rows,
// so that no bucket is summed serially by a few threads (llmc/cuda/encoder.cuh).
#define TOKEN_PIECE_ROWS 32

// The buckets cut into pieces for that sum: piece p covers the entries
// piece_start[p] .. piece_start[p + 1] - 1 of rows, in bucket order (a
// bucket's pieces are consecutive, TOKEN_PIECE_ROWS rows each but the
// last). A bucket of one piece sends the piece's sum to its token's row
// (piece_dest = token); the pieces of a larger bucket send theirs to
// consecutive partial slots (piece_dest = -1 - slot), and it is split bucket
// g: token split_token[g], slots split_first[g] .. split_first[g + 1] - 1.
typedef struct {
    int max_rows;
    int num_pieces, num_split;
    int *piece_start; // (max_rows + 1); piece_start[num_pieces] = the rows
    int *piece_dest;  // (max_rows)
    int *split_token; // (max_rows / TOKEN_PIECE_ROWS + 1)
    int *split_first; // (max_rows / TOKEN_PIECE_ROWS + 2)
} TokenPieces;

// the ints a TokenPieces for max_rows rows keeps, and the partial slots its
// split buckets may use (< 2 max_rows / TOKEN_PIECE_ROWS: a split bucket of
// n > TOKEN_PIECE_ROWS rows has ceil(n / TOKEN_PIECE_ROWS) < 2 n / TOKEN_PIECE_ROWS)
size_t token_pieces_ints(int max_rows);
int token_pieces_max_slots(int max_rows);
// in the caller's storage of token_pieces_ints(max_rows) ints
void token_pieces_init_at(TokenPieces *tp, int max_rows, int *storage);
// the pieces of tb's buckets (tb built for at most max_rows rows)
void token_pieces_build(TokenPieces *tp, const TokenBuckets *tb);

#endif
