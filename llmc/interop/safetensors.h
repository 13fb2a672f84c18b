// The safetensors format (Hugging Face): an 8-byte little-endian header
// length N, N bytes of JSON {"NAME": {"dtype", "shape", "data_offsets":
// [begin, end]}, ..., "__metadata__": {...}}, then the tensors' bytes, which
// the offsets (relative to the end of the header) must cover without gaps or
// overlaps. docs/formats.md lists the reader's checks.
#ifndef FOLDNORM_SAFETENSORS_H
#define FOLDNORM_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define SAFETENSORS_MAX_DIMS 8
#define SAFETENSORS_MAX_NAME 256
#define SAFETENSORS_MAX_HEADER_BYTES (100u << 20) // as the reference implementation

typedef enum { ST_F32, ST_F16, ST_BF16, ST_F64, ST_OTHER } SafetensorsDtype;

typedef struct {
    char name[SAFETENSORS_MAX_NAME];
    char dtype_name[8]; // as written: "F32", "BF16", "I64", ...
    SafetensorsDtype dtype;
    int ndim;
    int64_t shape[SAFETENSORS_MAX_DIMS];
    size_t numel;
    const unsigned char *data; // into the parsed bytes (which must outlive this)
    size_t bytes;
} SafetensorsTensor;

typedef struct {
    SafetensorsTensor *tensors;
    int count;
} Safetensors;

// Parses bytes[0..len). 0, or -1 with the reason in err and nothing
// allocated. Never exits; every offset and size is checked against len.
int safetensors_parse(Safetensors *out, const unsigned char *bytes, size_t len, char *err,
                      size_t err_bytes);
void safetensors_free(Safetensors *st);
// The tensor called name, or NULL.
const SafetensorsTensor *safetensors_find(const Safetensors *st, const char *name);
// Converts a F32, F16, BF16 or F64 tensor into numel floats; -1 for other dtypes.
int safetensors_to_f32(const SafetensorsTensor *t, float *dst);

// One fp32 tensor to write.
typedef struct {
    const char *name;
    int ndim;
    int64_t shape[SAFETENSORS_MAX_DIMS];
    const float *data;
} SafetensorsOut;

// Writes tensors[0..count) as F32 with {"format": "pt"} metadata (what
// transformers' from_pretrained expects), the header padded with spaces to a
// multiple of 8 bytes; atomically (write_file_atomic). Dies naming the file.
void safetensors_write(const char *path, const SafetensorsOut *tensors, int count);

#endif
