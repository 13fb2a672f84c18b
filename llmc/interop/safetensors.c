#include "safetensors.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_write.h"
#include "core/reader.h"
#include "core/utils.h"

static const struct {
    const char *name;
    size_t bytes;
    SafetensorsDtype dtype;
} DTYPES[] = {
    {"F32", 4, ST_F32}, {"F16", 2, ST_F16},  {"BF16", 2, ST_BF16}, {"F64", 8, ST_F64},
    {"I64", 8, ST_OTHER}, {"I32", 4, ST_OTHER}, {"I16", 2, ST_OTHER}, {"I8", 1, ST_OTHER},
    {"U64", 8, ST_OTHER}, {"U32", 4, ST_OTHER}, {"U16", 2, ST_OTHER}, {"U8", 1, ST_OTHER},
    {"BOOL", 1, ST_OTHER}, {"F8_E4M3", 1, ST_OTHER}, {"F8_E5M2", 1, ST_OTHER},
};

// A JSON number that is a non-negative integer below 2^53 (exact in a double).
static int json_size(const cJSON *item, size_t *out) {
    if (!cJSON_IsNumber(item)) return -1;
    double v = item->valuedouble;
    if (!(v >= 0 && v < 9007199254740992.0) || v != floor(v)) return -1;
    *out = (size_t)v;
    return 0;
}

// Fills t from one header entry; the data pointer is set later.
static int parse_entry(const cJSON *entry, SafetensorsTensor *t, size_t *begin, size_t *end,
                       char *err, size_t err_bytes) {
    if (!cJSON_IsObject(entry)) return input_error(err, err_bytes, "tensor '%s': not a JSON object", t->name);
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(entry, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(entry, "shape");
    const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(entry, "data_offsets");
    if (!cJSON_IsString(dtype) || !cJSON_IsArray(shape) || !cJSON_IsArray(offsets)) {
        return input_error(err, err_bytes,
                           "tensor '%s': needs a string \"dtype\" and arrays \"shape\" and \"data_offsets\"",
                           t->name);
    }
    size_t elem_bytes = 0;
    for (size_t i = 0; i < sizeof(DTYPES) / sizeof(DTYPES[0]); i++) {
        if (strcmp(dtype->valuestring, DTYPES[i].name) == 0) {
            elem_bytes = DTYPES[i].bytes;
            t->dtype = DTYPES[i].dtype;
            snprintf(t->dtype_name, sizeof(t->dtype_name), "%s", DTYPES[i].name);
        }
    }
    if (elem_bytes == 0) {
        return input_error(err, err_bytes, "tensor '%s': unknown dtype \"%.16s\"", t->name, dtype->valuestring);
    }
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > SAFETENSORS_MAX_DIMS) {
        return input_error(err, err_bytes, "tensor '%s': %d dimensions (at most %d)", t->name, ndim,
                           SAFETENSORS_MAX_DIMS);
    }
    t->ndim = ndim;
    size_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        size_t n;
        if (json_size(cJSON_GetArrayItem(shape, d), &n) != 0 || size_mul(numel, n, &numel) != 0) {
            return input_error(err, err_bytes, "tensor '%s': shape entry %d is not a size", t->name, d);
        }
        t->shape[d] = (int64_t)n;
    }
    t->numel = numel;
    if (cJSON_GetArraySize(offsets) != 2 || json_size(cJSON_GetArrayItem(offsets, 0), begin) != 0 ||
        json_size(cJSON_GetArrayItem(offsets, 1), end) != 0 || *begin > *end) {
        return input_error(err, err_bytes, "tensor '%s': \"data_offsets\" must be [begin, end] with begin <= end",
                           t->name);
    }
    if (size_mul(numel, elem_bytes, &t->bytes) != 0 || t->bytes != *end - *begin) {
        return input_error(err, err_bytes, "tensor '%s': %zu bytes at [%zu, %zu), but %s x %zu elements need %zu",
                           t->name, *end - *begin, *begin, *end, t->dtype_name, numel, numel * elem_bytes);
    }
    return 0;
}

typedef struct {
    size_t begin, end;
    int index;
} Span;

static int compare_spans(const void *a, const void *b) {
    const Span *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

int safetensors_parse(Safetensors *out, const unsigned char *bytes, size_t len, char *err,
                      size_t err_bytes) {
    out->tensors = NULL;
    out->count = 0;
    if (len < 8) return input_error(err, err_bytes, "truncated: %zu bytes, shorter than the 8-byte header length", len);
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; i--) header_len = header_len << 8 | bytes[i];
    if (header_len > SAFETENSORS_MAX_HEADER_BYTES || header_len > len - 8) {
        return input_error(err, err_bytes, "header length %llu does not fit the %zu-byte file (limit %u)",
                           (unsigned long long)header_len, len, SAFETENSORS_MAX_HEADER_BYTES);
    }
    const char *header = (const char *)bytes + 8;
    if (header_len == 0 || header[0] != '{') return input_error(err, err_bytes, "the header is not a JSON object");
    if (memchr(header, '\0', header_len) != NULL) return input_error(err, err_bytes, "NUL byte in the header");
    const char *parse_end = NULL;
    cJSON *json = cJSON_ParseWithLengthOpts(header, header_len, &parse_end, 0);
    if (json == NULL || !cJSON_IsObject(json)) {
        size_t at = parse_end != NULL ? (size_t)(parse_end - header) : 0;
        cJSON_Delete(json);
        return input_error(err, err_bytes, "malformed JSON header near byte %zu", at + 8);
    }
    for (const char *p = parse_end; p < header + header_len; p++) { // padding: white space only
        if (*p != ' ' && *p != '\n' && *p != '\t' && *p != '\r') {
            cJSON_Delete(json);
            return input_error(err, err_bytes, "trailing data after the JSON header at byte %zu",
                               (size_t)(p - header) + 8);
        }
    }
    const unsigned char *data = bytes + 8 + header_len;
    size_t data_len = len - 8 - (size_t)header_len;
    int n = 0;
    for (const cJSON *e = json->child; e != NULL; e = e->next) n += strcmp(e->string, "__metadata__") != 0;
    out->tensors = n > 0 ? calloc((size_t)n, sizeof(SafetensorsTensor)) : NULL;
    Span *spans = n > 0 ? malloc((size_t)n * sizeof(Span)) : NULL;
    if (n > 0 && (out->tensors == NULL || spans == NULL)) {
        free(out->tensors);
        free(spans);
        out->tensors = NULL;
        cJSON_Delete(json);
        return input_error(err, err_bytes, "out of memory for %d tensors", n);
    }
    int rc = 0;
    for (const cJSON *e = json->child; e != NULL && rc == 0; e = e->next) {
        if (strcmp(e->string, "__metadata__") == 0) {
            if (!cJSON_IsObject(e)) rc = input_error(err, err_bytes, "\"__metadata__\" is not an object");
            continue;
        }
        SafetensorsTensor *t = &out->tensors[out->count];
        if (strlen(e->string) == 0 || strlen(e->string) >= SAFETENSORS_MAX_NAME) {
            rc = input_error(err, err_bytes, "tensor %d: name empty or longer than %d bytes", out->count,
                             SAFETENSORS_MAX_NAME - 1);
            break;
        }
        snprintf(t->name, sizeof(t->name), "%s", e->string);
        if (safetensors_find(out, t->name) != NULL) {
            rc = input_error(err, err_bytes, "tensor '%s' appears twice", t->name);
            break;
        }
        Span *s = &spans[out->count];
        rc = parse_entry(e, t, &s->begin, &s->end, err, err_bytes);
        if (rc == 0 && s->end > data_len) {
            rc = input_error(err, err_bytes, "tensor '%s': bytes [%zu, %zu) run past the %zu data bytes (truncated?)",
                             t->name, s->begin, s->end, data_len);
        }
        s->index = out->count;
        if (rc == 0) {
            t->data = data + s->begin;
            out->count++;
        }
    }
    cJSON_Delete(json);
    if (rc == 0) { // the tensors must tile the data exactly: no gaps, no overlaps, nothing after
        qsort(spans, (size_t)out->count, sizeof(Span), compare_spans);
        size_t at = 0;
        for (int i = 0; i < out->count && rc == 0; i++) {
            if (spans[i].begin != at) {
                rc = input_error(err, err_bytes, "tensor '%s' starts at data byte %zu, expected %zu (%s)",
                                 out->tensors[spans[i].index].name, spans[i].begin, at,
                                 spans[i].begin < at ? "overlap" : "gap");
            }
            at = spans[i].end;
        }
        if (rc == 0 && at != data_len) {
            rc = input_error(err, err_bytes, "%zu data bytes after the last tensor (which ends at %zu)",
                             data_len - at, at);
        }
    }
    free(spans);
    if (rc != 0) safetensors_free(out);
    return rc;
}

void safetensors_free(Safetensors *st) {
    free(st->tensors);
    st->tensors = NULL;
    st->count = 0;
}

const SafetensorsTensor *safetensors_find(const Safetensors *st, const char *name) {
    for (int i = 0; i < st->count; i++) {
        if (strcmp(st->tensors[i].name, name) == 0) return &st->tensors[i];
    }
    return NULL;
}

static float half_to_float(uint16_t h) { // IEEE binary16, subnormals included
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 31, mant = h & 1023;
    float v;
    if (exp == 0) {
        v = ldexpf((float)mant, -24);
    } else if (exp == 31) {
        v = mant ? NAN : INFINITY;
    } else {
        v = ldexpf((float)(mant | 1024), (int)exp - 25);
    }
    return sign ? -v : v;
}

int safetensors_to_f32(const SafetensorsTensor *t, float *dst) {
    const unsigned char *p = t->data;
    for (size_t i = 0; i < t->numel; i++) {
        switch (t->dtype) { // little-endian bytes, whatever the host
        case ST_F32: {
            uint32_t b = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
                         (uint32_t)p[4 * i + 3] << 24;
            memcpy(&dst[i], &b, 4);
            break;
        }
        case ST_BF16: { // the top half of a float
            uint32_t b = ((uint32_t)p[2 * i] | (uint32_t)p[2 * i + 1] << 8) << 16;
            memcpy(&dst[i], &b, 4);
            break;
        }
        case ST_F16:
            dst[i] = half_to_float((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
            break;
        case ST_F64: {
            uint64_t b = 0;
            for (int k = 7; k >= 0; k--) b = b << 8 | p[8 * i + (size_t)k];
            double d;
            memcpy(&d, &b, 8);
            dst[i] = (float)d;
            break;
        }
        default:
            return -1;
        }
    }
    return 0;
}

typedef struct {
    const SafetensorsOut *tensors;
    int count;
    const char *header;
    size_t header_len; // padded
} WriteJob;

static void write_tensors(FILE *f, const char *path, const void *ctx) {
    const WriteJob *job = ctx;
    unsigned char len_bytes[8];
    for (int i = 0; i < 8; i++) len_bytes[i] = (unsigned char)((uint64_t)job->header_len >> (8 * i));
    fwrite_check(len_bytes, 1, 8, f, path);
    fwrite_check(job->header, 1, job->header_len, f, path);
    for (int i = 0; i < job->count; i++) {
        size_t numel = 1;
        for (int d = 0; d < job->tensors[i].ndim; d++) numel *= (size_t)job->tensors[i].shape[d];
        fwrite_check(job->tensors[i].data, sizeof(float), numel, f, path); // x86-64 and arm64: little-endian
    }
}

void safetensors_write(const char *path, const SafetensorsOut *tensors, int count) {
    cJSON *root = cJSON_CreateObject(), *meta = cJSON_CreateObject();
    if (root == NULL || meta == NULL || !cJSON_AddStringToObject(meta, "format", "pt")) {
        fatal("%s: out of memory building the header", path);
    }
    cJSON_AddItemToObject(root, "__metadata__", meta);
    size_t offset = 0;
    for (int i = 0; i < count; i++) {
        const SafetensorsOut *t = &tensors[i];
        size_t numel = 1;
        cJSON *entry = cJSON_CreateObject(), *shape = cJSON_CreateArray(), *offsets = cJSON_CreateArray();
        if (entry == NULL || shape == NULL || offsets == NULL || !cJSON_AddStringToObject(entry, "dtype", "F32")) {
            fatal("%s: out of memory building the header", path);
        }
        for (int d = 0; d < t->ndim; d++) {
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->shape[d]));
            numel *= (size_t)t->shape[d];
        }
        cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)offset));
        offset += numel * sizeof(float);
        cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)offset));
        cJSON_AddItemToObject(entry, "shape", shape);
        cJSON_AddItemToObject(entry, "data_offsets", offsets);
        cJSON_AddItemToObject(root, t->name, entry);
    }
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (text == NULL) fatal("%s: out of memory printing the header", path);
    size_t len = strlen(text), padded = (len + 7) / 8 * 8;
    char *header = malloc_check(padded, "the safetensors header");
    memcpy(header, text, len);
    memset(header + len, ' ', padded - len);
    free(text);
    WriteJob job = {tensors, count, header, padded};
    write_file_atomic(path, write_tensors, &job);
    free(header);
}
