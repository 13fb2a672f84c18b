// MNIST-style IDX files, optionally gzip-compressed (read through zlib; a build
// without zlib refuses gzip input):
// a big-endian header 0x00 0x00 TYPE NDIM, NDIM big-endian uint32 sizes, then
// the unsigned bytes. Images: type 0x08, 3 dims (N, rows, cols); labels:
// type 0x08, 1 dim (N). Used for Fashion-MNIST (Debian's dataset-fashion-mnist).
#ifndef FOLDNORM_IDX_H
#define FOLDNORM_IDX_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int count;      // N
    int rows, cols; // images only
    uint8_t *data;  // N * rows * cols (images) or N (labels)
} IdxArray;

// Parses an IDX file held in memory, gzip-compressed (one or more members,
// inflated through zlib's in-memory API) or not: the magic, expected_dims
// sizes (non-zero, bounded), a payload exactly as long as they say. 0, or -1
// with the reason in err and nothing allocated. Never exits.
int idx_parse(IdxArray *out, const void *data, size_t bytes, int expected_dims, char *err,
              size_t err_bytes);
// Equal image and label counts, every label < num_classes; 0 or -1 (err).
int idx_check_split(const IdxArray *images, const IdxArray *labels, int num_classes, char *err,
                    size_t err_bytes);
// Dies naming the file on: open/gzip errors, a wrong magic, a dimension
// count other than expected_dims, sizes that are zero or implausibly large,
// or a payload shorter or longer than the header says.
void idx_read(IdxArray *out, const char *path, int expected_dims);
// Images and labels of one split; dies if the counts differ or a label is
// >= num_classes.
void idx_read_split(IdxArray *images, IdxArray *labels, const char *images_path,
                    const char *labels_path, int num_classes);
void idx_free(IdxArray *array);

#endif
