// Checked I/O and allocation: every call reports the file, the call and the
// reason, then exits non-zero. Used everywhere instead of bare libc calls.
#ifndef FOLDNORM_UTILS_H
#define FOLDNORM_UTILS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#if defined(__GNUC__)
#define FN_NORETURN __attribute__((noreturn))
#define FN_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define FN_NORETURN
#define FN_PRINTF(a, b)
#endif

// Prints "error: <message>" to stderr and exits with status 1.
FN_NORETURN void fatal(const char *fmt, ...) FN_PRINTF(1, 2);

// Also refuses a directory (which fopen opens for reading on Linux).
FILE *fopen_check(const char *path, const char *mode);
// Reads exactly n items or dies naming the file and what was being read.
void fread_check(void *dst, size_t size, size_t n, FILE *f, const char *path, const char *what);
void fwrite_check(const void *src, size_t size, size_t n, FILE *f, const char *path);
void fclose_check(FILE *f, const char *path);
// The size of a regular file; dies for a directory, device, pipe or socket.
long file_size_bytes(FILE *f, const char *path);
// "a directory", "a character device", ... for a stat mode that is not a regular file.
const char *file_kind_name(mode_t mode);
// The first int32 of a regular file (its magic), 0 for anything else: a missing,
// unreadable or too-short file, a directory, a device. Never fails: the loader
// picked by the magic names what is wrong.
int32_t file_magic(const char *path);

void *malloc_check(size_t bytes, const char *what);
void *calloc_check(size_t n, size_t size, const char *what);

// n * m as size_t, dying on overflow (sizes computed from untrusted headers).
size_t mul_size_check(size_t n, size_t m, const char *what);

// Creates the directory and any missing parents (mkdir -p), or dies naming it.
void make_directories(const char *path);

// Wall-clock seconds from a monotonic clock.
double now_seconds(void);

// This machine's host name (gethostname; "?" if it has none), for messages
// that say where a process runs.
const char *host_name(void);

#endif
