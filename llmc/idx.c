#include "idx.h"

#include <stdlib.h>
#include <zlib.h>

#include "utils.h"

enum { IDX_MAX_COUNT = 1 << 24, IDX_MAX_SIDE = 4096 };

// Reads exactly n bytes from the (possibly gzipped) stream or dies.
static void gz_read_exact(gzFile gz, void *dst, size_t n, const char *path, const char *what) {
    size_t done = 0;
    while (done < n) {
        size_t chunk = n - done > (1u << 30) ? (1u << 30) : n - done;
        int got = gzread(gz, (char *)dst + done, (unsigned)chunk);
        if (got < 0) {
            int err;
            const char *msg = gzerror(gz, &err);
            fatal("%s: cannot read %s: corrupt gzip data (%s)", path, what, msg);
        }
        if (got == 0) {
            fatal("%s: truncated: the file ends inside %s (%zu of %zu bytes)", path, what, done, n);
        }
        done += (size_t)got;
    }
}

static uint32_t big_endian_u32(const uint8_t *b) {
    return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
}

void idx_read(IdxArray *out, const char *path, int expected_dims) {
    FILE *probe = fopen_check(path, "rb"); // a clear error for a missing file
    fclose(probe);
    gzFile gz = gzopen(path, "rb");
    if (gz == NULL) {
        fatal("%s: cannot open with zlib", path);
    }
    uint8_t magic[4];
    gz_read_exact(gz, magic, 4, path, "the IDX magic");
    if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] != expected_dims) {
        fatal("%s: not an IDX file of unsigned bytes with %d dimension(s) (magic %02x %02x %02x "
              "%02x, expected 00 00 08 %02x)",
              path, expected_dims, magic[0], magic[1], magic[2], magic[3], expected_dims);
    }
    uint8_t raw[12];
    gz_read_exact(gz, raw, 4 * (size_t)expected_dims, path, "the IDX sizes");
    uint32_t dims[3] = {1, 1, 1};
    for (int d = 0; d < expected_dims; d++) {
        dims[d] = big_endian_u32(raw + 4 * d);
    }
    if (dims[0] == 0 || dims[0] > IDX_MAX_COUNT || dims[1] == 0 || dims[1] > IDX_MAX_SIDE ||
        dims[2] == 0 || dims[2] > IDX_MAX_SIDE) {
        fatal("%s: implausible IDX sizes %u x %u x %u", path, dims[0], dims[1], dims[2]);
    }
    size_t n = mul_size_check(mul_size_check(dims[0], dims[1], path), dims[2], path);
    out->count = (int)dims[0];
    out->rows = expected_dims == 3 ? (int)dims[1] : 0;
    out->cols = expected_dims == 3 ? (int)dims[2] : 0;
    out->data = malloc_check(n, "IDX data");
    gz_read_exact(gz, out->data, n, path, "the IDX data");
    uint8_t extra;
    int more = gzread(gz, &extra, 1);
    if (more != 0) {
        fatal("%s: %s after the %zu bytes the header describes", path,
              more < 0 ? "corrupt gzip data" : "trailing data", n);
    }
    gzclose(gz);
}

void idx_read_split(IdxArray *images, IdxArray *labels, const char *images_path,
                    const char *labels_path, int num_classes) {
    idx_read(images, images_path, 3);
    idx_read(labels, labels_path, 1);
    if (images->count != labels->count) {
        fatal("%s has %d images but %s has %d labels", images_path, images->count, labels_path,
              labels->count);
    }
    for (int i = 0; i < labels->count; i++) {
        if (labels->data[i] >= num_classes) {
            fatal("%s: label %d at index %d is not a class in [0, %d)", labels_path,
                  labels->data[i], i, num_classes);
        }
    }
}

void idx_free(IdxArray *array) {
    free(array->data);
    array->data = NULL;
}
