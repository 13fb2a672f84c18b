#include "idx.h"

#include <stdlib.h>
#include <string.h>
#ifdef FOLDNORM_ZLIB
#include <zlib.h>
#endif

#include "core/reader.h"
#include "core/utils.h"

enum { IDX_MAX_COUNT = 1 << 24, IDX_MAX_SIDE = 4096 };
// the largest file idx_read takes into memory (Fashion-MNIST's biggest is 26 MB)
#define IDX_MAX_FILE_BYTES ((size_t)1 << 32)

// The bytes of an IDX file: the input itself, or inflated from gzip members
// (back to back, as gzip -c a b > c writes them) through zlib's in-memory API.
// A build without zlib (FOLDNORM_ZLIB undefined: zlib.h was not found, as on
// a GPU image without zlib1g-dev) refuses gzip input, saying so.
typedef struct {
    const unsigned char *in;
    size_t in_size, in_pos;
    int gzip;
#ifdef FOLDNORM_ZLIB
    z_stream z;
    int z_open;   // z holds an inflate state
    int z_member; // inside a member (its end not yet seen)
#endif
} IdxSource;

static int is_gzip(const unsigned char *p, size_t n) {
    return n >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

static void source_close(IdxSource *s) {
#ifdef FOLDNORM_ZLIB
    if (s->z_open) {
        inflateEnd(&s->z);
        s->z_open = 0;
    }
#else
    (void)s;
#endif
}

// Up to n bytes into dst (fewer only at the end of the data); -1 on corrupt gzip.
static int source_read(IdxSource *s, unsigned char *dst, size_t n, size_t *got, char *err,
                       size_t err_bytes) {
    *got = 0;
    if (!s->gzip) {
        size_t left = s->in_size - s->in_pos;
        *got = n < left ? n : left;
        memcpy(dst, s->in + s->in_pos, *got);
        s->in_pos += *got;
        return 0;
    }
#ifndef FOLDNORM_ZLIB
    return input_error(err, err_bytes,
                       "gzip-compressed, and this build has no zlib (zlib.h was not found when "
                       "it was built): gunzip the file, or rebuild where zlib1g-dev is installed");
#else
    while (*got < n) {
        if (!s->z_member) {
            // between members: the data ends here, or another member follows
            if (s->in_pos == s->in_size) {
                return 0;
            }
            if (!is_gzip(s->in + s->in_pos, s->in_size - s->in_pos)) {
                return input_error(err, err_bytes,
                                   "corrupt gzip data: %zu bytes after the gzip stream are not "
                                   "another gzip member", s->in_size - s->in_pos);
            }
            if (!s->z_open) {
                memset(&s->z, 0, sizeof(s->z));
                if (inflateInit2(&s->z, 16 + MAX_WBITS) != Z_OK) {
                    return input_error(err, err_bytes, "zlib: cannot start inflating");
                }
                s->z_open = 1;
            } else if (inflateReset(&s->z) != Z_OK) {
                return input_error(err, err_bytes, "zlib: cannot reset inflate");
            }
            s->z_member = 1;
        }
        // zlib counts in uInt: feed and take at most 1 GiB a call
        size_t in_left = s->in_size - s->in_pos, out_left = n - *got;
        s->z.next_in = (Bytef *)(s->in + s->in_pos);
        s->z.avail_in = (uInt)(in_left < (1u << 30) ? in_left : (1u << 30));
        s->z.next_out = dst + *got;
        s->z.avail_out = (uInt)(out_left < (1u << 30) ? out_left : (1u << 30));
        uInt avail_in = s->z.avail_in, avail_out = s->z.avail_out;
        int rc = inflate(&s->z, Z_NO_FLUSH);
        s->in_pos += avail_in - s->z.avail_in;
        *got += avail_out - s->z.avail_out;
        if (rc == Z_STREAM_END) {
            s->z_member = 0; // its CRC and length checked by zlib
        } else if (rc == Z_BUF_ERROR && s->in_pos == s->in_size) {
            return input_error(err, err_bytes, "corrupt gzip data: the gzip stream is truncated");
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            return input_error(err, err_bytes, "corrupt gzip data (%s)",
                               s->z.msg != NULL ? s->z.msg : zError(rc));
        }
    }
    return 0;
#endif
}

// Exactly n bytes of `what`, or an error (truncated, corrupt gzip).
static int source_read_exact(IdxSource *s, unsigned char *dst, size_t n, const char *what,
                             char *err, size_t err_bytes) {
    size_t got;
    if (source_read(s, dst, n, &got, err, err_bytes) != 0) {
        return -1;
    }
    if (got != n) {
        return input_error(err, err_bytes, "truncated: the file ends inside %s (%zu of %zu bytes)",
                           what, got, n);
    }
    return 0;
}

static uint32_t big_endian_u32(const uint8_t *b) {
    return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
}

static int idx_parse_source(IdxSource *s, IdxArray *out, int expected_dims, char *err,
                            size_t err_bytes) {
    uint8_t magic[4];
    if (source_read_exact(s, magic, 4, "the IDX magic", err, err_bytes) != 0) {
        return -1;
    }
    if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] != expected_dims) {
        return input_error(err, err_bytes,
                           "not an IDX file of unsigned bytes with %d dimension(s) (magic %02x "
                           "%02x %02x %02x, expected 00 00 08 %02x)",
                           expected_dims, magic[0], magic[1], magic[2], magic[3], expected_dims);
    }
    uint8_t raw[12];
    if (source_read_exact(s, raw, 4 * (size_t)expected_dims, "the IDX sizes", err, err_bytes) !=
        0) {
        return -1;
    }
    uint32_t dims[3] = {1, 1, 1};
    for (int d = 0; d < expected_dims; d++) {
        dims[d] = big_endian_u32(raw + 4 * d);
    }
    if (dims[0] == 0 || dims[0] > IDX_MAX_COUNT || dims[1] == 0 || dims[1] > IDX_MAX_SIDE ||
        dims[2] == 0 || dims[2] > IDX_MAX_SIDE) {
        return input_error(err, err_bytes, "implausible IDX sizes %u x %u x %u", dims[0], dims[1],
                           dims[2]);
    }
    size_t n = (size_t)dims[0] * dims[1] * dims[2]; // < 2^48
    // the buffer grows with the data actually present: a short file with a
    // huge header costs no more memory than its content
    size_t cap = n < 65536 ? n : 65536, have = 0;
    out->data = malloc(cap);
    if (out->data == NULL) {
        return input_error(err, err_bytes, "out of memory for the IDX data");
    }
    while (have < n) {
        if (have == cap) {
            cap = cap > n / 2 ? n : 2 * cap;
            uint8_t *grown = realloc(out->data, cap);
            if (grown == NULL) {
                return input_error(err, err_bytes, "out of memory for %zu bytes of IDX data", cap);
            }
            out->data = grown;
        }
        size_t got;
        if (source_read(s, out->data + have, cap - have, &got, err, err_bytes) != 0) {
            return -1;
        }
        if (got == 0) {
            return input_error(err, err_bytes,
                               "truncated: the file ends inside the IDX data (%zu of %zu bytes)",
                               have, n);
        }
        have += got;
    }
    uint8_t extra;
    size_t more;
    if (source_read(s, &extra, 1, &more, err, err_bytes) != 0) {
        return -1;
    }
    if (more != 0) {
        return input_error(err, err_bytes, "trailing data after the %zu bytes the header describes",
                           n);
    }
    out->count = (int)dims[0];
    out->rows = expected_dims == 3 ? (int)dims[1] : 0;
    out->cols = expected_dims == 3 ? (int)dims[2] : 0;
    return 0;
}

int idx_parse(IdxArray *out, const void *data, size_t bytes, int expected_dims, char *err,
              size_t err_bytes) {
    memset(out, 0, sizeof(*out));
    if (expected_dims != 1 && expected_dims != 3) {
        return input_error(err, err_bytes, "IDX: %d dimensions asked for (1 or 3)", expected_dims);
    }
    IdxSource s = {.in = data, .in_size = bytes, .gzip = is_gzip(data, bytes)};
    int rc = idx_parse_source(&s, out, expected_dims, err, err_bytes);
    source_close(&s);
    if (rc != 0) {
        idx_free(out);
    }
    return rc;
}

void idx_read(IdxArray *out, const char *path, int expected_dims) {
    unsigned char *bytes;
    size_t len;
    char err[READER_ERR_BYTES];
    if (read_file_bytes(path, IDX_MAX_FILE_BYTES, &bytes, &len, err, sizeof(err)) != 0 ||
        idx_parse(out, bytes, len, expected_dims, err, sizeof(err)) != 0) {
        fatal("%s: %s", path, err);
    }
    free(bytes);
}

int idx_check_split(const IdxArray *images, const IdxArray *labels, int num_classes, char *err,
                    size_t err_bytes) {
    if (images->count != labels->count) {
        return input_error(err, err_bytes, "%d images but %d labels", images->count,
                           labels->count);
    }
    for (int i = 0; i < labels->count; i++) {
        if (labels->data[i] >= num_classes) {
            return input_error(err, err_bytes, "label %d at index %d is not a class in [0, %d)",
                               labels->data[i], i, num_classes);
        }
    }
    return 0;
}

void idx_read_split(IdxArray *images, IdxArray *labels, const char *images_path,
                    const char *labels_path, int num_classes) {
    idx_read(images, images_path, 3);
    idx_read(labels, labels_path, 1);
    if (images->count != labels->count) {
        fatal("%s has %d images but %s has %d labels", images_path, images->count, labels_path,
              labels->count);
    }
    char err[READER_ERR_BYTES];
    if (idx_check_split(images, labels, num_classes, err, sizeof(err)) != 0) {
        fatal("%s: %s", labels_path, err);
    }
}

void idx_free(IdxArray *array) {
    free(array->data);
    array->data = NULL;
}
