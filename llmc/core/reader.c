#include "reader.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void reader_init_memory(Reader *r, const void *data, size_t size) {
    r->file = NULL;
    r->data = data;
    r->size = size;
    r->pos = 0;
}

int reader_init_file(Reader *r, FILE *f, char *err, size_t err_bytes) {
    r->file = f;
    r->data = NULL;
    r->pos = 0;
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        return input_error(err, err_bytes, "cannot stat: %s", strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) {
        return input_error(err, err_bytes, "is %s, expected a regular file",
                           file_kind_name(st.st_mode));
    }
    long here = ftell(f);
    if (here < 0 || fseek(f, 0, SEEK_END) != 0) {
        return input_error(err, err_bytes, "cannot seek: %s", strerror(errno));
    }
    long size = ftell(f);
    if (size < 0 || fseek(f, here, SEEK_SET) != 0) {
        return input_error(err, err_bytes, "cannot seek: %s", strerror(errno));
    }
    r->size = (size_t)size;
    r->pos = (size_t)here;
    return 0;
}

size_t reader_left(const Reader *r) {
    return r->pos < r->size ? r->size - r->pos : 0;
}

int reader_read(Reader *r, void *dst, size_t n, const char *what, char *err, size_t err_bytes) {
    size_t left = reader_left(r);
    if (n > left) {
        return input_error(err, err_bytes,
                           "truncated: the file ends inside %s (%zu of %zu bytes left)", what,
                           left, n);
    }
    if (n == 0) {
        return 0;
    }
    if (r->file == NULL) {
        memcpy(dst, r->data + r->pos, n);
    } else {
        size_t got = fread(dst, 1, n, r->file);
        if (got != n) {
            if (ferror(r->file)) {
                return input_error(err, err_bytes, "read error while reading %s: %s", what,
                                   strerror(errno));
            }
            return input_error(err, err_bytes,
                               "truncated: the file ends inside %s (%zu of %zu bytes)", what, got,
                               n);
        }
    }
    r->pos += n;
    return 0;
}

int input_error(char *err, size_t err_bytes, const char *fmt, ...) {
    if (err != NULL && err_bytes > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_bytes, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int size_mul(size_t a, size_t b, size_t *out) {
    if (b != 0 && a > SIZE_MAX / b) {
        return -1;
    }
    *out = a * b;
    return 0;
}

int size_add(size_t a, size_t b, size_t *out) {
    if (a > SIZE_MAX - b) {
        return -1;
    }
    *out = a + b;
    return 0;
}

int read_file_bytes(const char *path, size_t max_bytes, unsigned char **out, size_t *bytes,
                    char *err, size_t err_bytes) {
    *out = NULL;
    *bytes = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return input_error(err, err_bytes, "cannot open (mode rb): %s", strerror(errno));
    }
    Reader r;
    if (reader_init_file(&r, f, err, err_bytes) != 0) {
        fclose(f);
        return -1;
    }
    if (r.size > max_bytes) {
        fclose(f);
        return input_error(err, err_bytes, "file of %zu bytes is too large (%zu at most)", r.size,
                           max_bytes);
    }
    unsigned char *buf = malloc(r.size + 1);
    if (buf == NULL) {
        fclose(f);
        return input_error(err, err_bytes, "out of memory reading %zu bytes", r.size);
    }
    if (reader_read(&r, buf, r.size, "the file", err, err_bytes) != 0) {
        free(buf);
        fclose(f);
        return -1;
    }
    fclose(f);
    buf[r.size] = '\0';
    *out = buf;
    *bytes = r.size;
    return 0;
}
