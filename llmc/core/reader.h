// Parsing outside input without exiting. The parsers of model files, states,
// shards, IDX and tokenizer files take a Reader (bytes from memory for the
// fuzz targets, from an open file for the loaders) and return 0, or -1 with
// the reason written into a caller's buffer (err, err_bytes). The loaders add
// the file name and call fatal(); the parsers themselves never exit, keep no
// global state and bound every read and every size by the input's length.
#ifndef FOLDNORM_READER_H
#define FOLDNORM_READER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "utils.h"

// A buffer for one message (the loaders' and fuzz targets' err arrays).
#define READER_ERR_BYTES 512

typedef struct {
    FILE *file;                // NULL: read from data
    const unsigned char *data; // when file == NULL
    size_t size;               // bytes in the whole input
    size_t pos;                // bytes consumed
} Reader;

void reader_init_memory(Reader *r, const void *data, size_t size);
// Takes the size from the file (seek to the end and back); -1 if it cannot seek.
int reader_init_file(Reader *r, FILE *f, char *err, size_t err_bytes);
// Reads exactly n bytes, or returns -1 with "truncated: the input ends inside
// WHAT (k of n bytes)" (or a read error) in err.
int reader_read(Reader *r, void *dst, size_t n, const char *what, char *err, size_t err_bytes);
// Bytes not yet consumed.
size_t reader_left(const Reader *r);

// Writes the message into err and returns -1: `return input_error(err, n, ...)`.
int input_error(char *err, size_t err_bytes, const char *fmt, ...) FN_PRINTF(3, 4);
// *out = a * b (a + b); returns -1 on size_t overflow, 0 otherwise.
int size_mul(size_t a, size_t b, size_t *out);
int size_add(size_t a, size_t b, size_t *out);

// Reads a whole file (at most max_bytes) into a new buffer with a NUL after
// the last byte; *bytes is the length. -1 with the reason (cannot open, too
// large, read error) in err; the message does not repeat the path.
int read_file_bytes(const char *path, size_t max_bytes, unsigned char **out, size_t *bytes,
                    char *err, size_t err_bytes);

#endif
