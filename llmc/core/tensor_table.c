#include "tensor_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utils.h"

void tensor_table_init(TensorTable *t, int capacity) {
    memset(t, 0, sizeof(*t));
    size_t n = capacity > 0 ? (size_t)capacity : 1;
    t->capacity = capacity;
    t->names = calloc_check(n, sizeof(*t->names), "tensor names");
    t->offsets = calloc_check(n, sizeof(size_t), "tensor offsets");
    t->sizes = calloc_check(n, sizeof(size_t), "tensor sizes");
    t->decayed = calloc_check(n, 1, "tensor flags");
    t->centred = calloc_check(n, 1, "tensor flags");
}

size_t tensor_table_add(TensorTable *t, const char *name, size_t size, int decayed, int centred) {
    if (t->count >= t->capacity) {
        fatal("tensor table: more than the %d tensors planned (adding %s)", t->capacity, name);
    }
    int i = t->count++;
    snprintf(t->names[i], sizeof(t->names[i]), "%s", name);
    t->offsets[i] = t->num_parameters;
    t->sizes[i] = size;
    t->decayed[i] = (unsigned char)decayed;
    t->centred[i] = (unsigned char)centred;
    t->num_parameters += size;
    return t->offsets[i];
}

int tensor_table_find(const TensorTable *t, size_t index) {
    for (int i = 0; i < t->count; i++) {
        if (index - t->offsets[i] < t->sizes[i]) {
            return i;
        }
    }
    return -1;
}

void tensor_table_free(TensorTable *t) {
    free(t->names);
    free(t->offsets);
    free(t->sizes);
    free(t->decayed);
    free(t->centred);
    memset(t, 0, sizeof(*t));
}

float *alloc_tensors(float **fields, const size_t *sizes, int count, size_t extra, const char *what) {
    for (int i = 0; i < count; i++) {
        extra += sizes[i];
    }
    float *memory = malloc_check(mul_size_check(extra, sizeof(float), what), what);
    point_tensors(fields, sizes, count, memory);
    return memory;
}

void point_tensors(float **fields, const size_t *sizes, int count, float *memory) {
    for (int i = 0; i < count; i++) {
        fields[i] = memory;
        memory += sizes[i];
    }
}
