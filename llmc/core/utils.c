#define _POSIX_C_SOURCE 200809L
#include "utils.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void fatal(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "error: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(EXIT_FAILURE);
}

const char *file_kind_name(mode_t mode) {
    return S_ISDIR(mode)    ? "a directory"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISFIFO(mode) ? "a pipe"
           : S_ISSOCK(mode) ? "a socket"
                            : "not a regular file";
}

FILE *fopen_check(const char *path, const char *mode) {
    FILE *f = fopen(path, mode);
    if (f == NULL) {
        fatal("%s: cannot open (mode %s): %s", path, mode, strerror(errno));
    }
    struct stat st;
    // fopen(dir, "r") succeeds on Linux; reads then fail, and seeking gives LONG_MAX
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        fatal("%s: is a directory, expected a file", path);
    }
    return f;
}

void fread_check(void *dst, size_t size, size_t n, FILE *f, const char *path, const char *what) {
    size_t got = fread(dst, size, n, f);
    if (got != n) {
        if (ferror(f)) {
            fatal("%s: read error while reading %s: %s", path, what, strerror(errno));
        }
        fatal("%s: truncated file: expected %zu items of %zu bytes for %s, got %zu", path, n, size,
              what, got);
    }
}

void fwrite_check(const void *src, size_t size, size_t n, FILE *f, const char *path) {
    if (fwrite(src, size, n, f) != n) {
        fatal("%s: write failed: %s", path, strerror(errno));
    }
}

void fclose_check(FILE *f, const char *path) {
    if (fclose(f) != 0) {
        fatal("%s: close failed: %s", path, strerror(errno));
    }
}

long file_size_bytes(FILE *f, const char *path) {
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        fatal("%s: cannot stat: %s", path, strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) {
        fatal("%s: is %s, expected a regular file", path, file_kind_name(st.st_mode));
    }
    long here = ftell(f);
    if (here < 0 || fseek(f, 0, SEEK_END) != 0) {
        fatal("%s: cannot seek: %s", path, strerror(errno));
    }
    long size = ftell(f);
    if (size < 0 || fseek(f, here, SEEK_SET) != 0) {
        fatal("%s: cannot seek: %s", path, strerror(errno));
    }
    return size;
}

void *malloc_check(size_t bytes, const char *what) {
    void *p = malloc(bytes == 0 ? 1 : bytes);
    if (p == NULL) {
        fatal("out of memory allocating %zu bytes for %s", bytes, what);
    }
    return p;
}

void *calloc_check(size_t n, size_t size, const char *what) {
    void *p = calloc(n == 0 ? 1 : n, size == 0 ? 1 : size);
    if (p == NULL) {
        fatal("out of memory allocating %zu x %zu bytes for %s", n, size, what);
    }
    return p;
}

size_t mul_size_check(size_t n, size_t m, const char *what) {
    if (m != 0 && n > SIZE_MAX / m) {
        fatal("size overflow computing %s (%zu x %zu)", what, n, m);
    }
    return n * m;
}

void make_directories(const char *path) {
    size_t n = strlen(path) + 1;
    char *prefix = malloc_check(n, "directory path");
    memcpy(prefix, path, n);
    // each parent in turn: cut the path after every '/' but a leading one
    for (char *p = prefix + 1;; p++) {
        if (*p != '/' && *p != '\0') {
            continue;
        }
        char saved = *p;
        *p = '\0';
        struct stat st;
        if (mkdir(prefix, 0755) != 0 && errno != EEXIST) {
            fatal("%s: cannot create directory %s: %s", path, prefix, strerror(errno));
        }
        if (stat(prefix, &st) != 0 || !S_ISDIR(st.st_mode)) {
            fatal("%s: %s exists and is not a directory", path, prefix);
        }
        *p = saved;
        if (saved == '\0') {
            break;
        }
    }
    free(prefix);
}

double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int32_t file_magic(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        return 0;
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return 0;
    }
    int32_t magic = 0;
    size_t got = fread(&magic, sizeof(magic), 1, f);
    fclose(f);
    return got == 1 ? magic : 0;
}

const char *host_name(void) {
    static char host[256];
    if (host[0] == '\0' && gethostname(host, sizeof(host) - 1) != 0) {
        snprintf(host, sizeof(host), "?");
    }
    return host;
}
