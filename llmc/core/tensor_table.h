// A model's parameter tensors in file order: name, offset and size in the
// flat parameter buffer, and whether AdamW decays it / CBWC centres it.
// Built by a layout (vision_layout.c); read by the model, the file reader
// (naming a bad parameter) and the trainer.
#ifndef FOLDNORM_TENSOR_TABLE_H
#define FOLDNORM_TENSOR_TABLE_H

#include <stddef.h>

#define TENSOR_NAME_BYTES 32

typedef struct {
    int count, capacity;
    char (*names)[TENSOR_NAME_BYTES];
    size_t *offsets, *sizes;
    unsigned char *decayed, *centred;
    size_t num_parameters; // the sum of the sizes
} TensorTable;

// An empty table with room for capacity tensors.
void tensor_table_init(TensorTable *t, int capacity);
// Appends a tensor after the last one and returns its offset.
size_t tensor_table_add(TensorTable *t, const char *name, size_t size, int decayed, int centred);
// The tensor holding parameter `index`, or -1 past the end.
int tensor_table_find(const TensorTable *t, size_t index);
void tensor_table_free(TensorTable *t);

// Points the fields of a struct of float* (in declaration order) into one
// buffer, field i at the sum of sizes[0..i).
void point_tensors(float **fields, const size_t *sizes, int count, float *memory);
// One buffer for the count tensors plus extra floats after them, fields
// pointed into it; exits naming `what` when it cannot be had.
float *alloc_tensors(float **fields, const size_t *sizes, int count, size_t extra, const char *what);

#endif
