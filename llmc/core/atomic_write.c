#define _GNU_SOURCE // fopencookie
#include "atomic_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <libgen.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checksum.h"
#include "utils.h"

// The stream handed to a writer: bytes go to fd; the first failed write(2)
// is kept in error and later writes are dropped, so the writer finishes and
// write_file_atomic can clean up (fwrite_check would exit with the file left).
typedef struct {
    int fd;
    int error;       // errno of the first failed write, 0 if none
    uint64_t bytes;  // offset of the next byte
    uint32_t crc;    // CRC32 of the bytes so far, checksum slots as zero
} Sink;

static ssize_t sink_write(void *cookie, const char *buf, size_t n) {
    Sink *s = cookie;
    for (size_t done = 0; s->error == 0 && done < n;) {
        ssize_t w = write(s->fd, buf + done, n - done);
        if (w < 0) {
            if (errno != EINTR) {
                s->error = errno;
            }
            continue;
        }
        if (w == 0) {
            s->error = EIO;
            continue;
        }
        s->crc = checksum_update(s->crc, s->bytes + done, buf + done, (size_t)w);
        done += (size_t)w;
    }
    s->bytes += n;
    return (ssize_t)n; // never short: the error is reported by write_file_atomic
}

// PATH must be a regular file or not exist: a folder or a device is refused
// before anything is written.
static void refuse_non_file(const char *path) {
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        fatal("%s: cannot write the output there: it is %s, not a file", path,
              S_ISDIR(st.st_mode) ? "a directory" : "a special file (device, pipe or socket)");
    }
}

static void fsync_directory_of(const char *path) {
    char *copy = strdup(path);
    if (copy == NULL) {
        fatal("out of memory");
    }
    int fd = open(dirname(copy), O_RDONLY);
    if (fd >= 0) {
        fsync(fd); // best effort: some filesystems refuse fsync on directories
        close(fd);
    }
    free(copy);
}

// Stores kind and CRC in slots 254-255 of the written file; an errno or 0.
static int store_checksum(Sink *s) {
    if (s->bytes < CHECKSUM_HEADER_INTS * sizeof(int32_t)) {
        return EINVAL; // not a header format: a bug in the caller
    }
    int32_t field[2] = {CHECKSUM_KIND_CRC32, (int32_t)s->crc};
    ssize_t w = pwrite(s->fd, field, sizeof(field), CHECKSUM_FIELD_OFFSET);
    return w == (ssize_t)sizeof(field) ? 0 : w < 0 ? errno : EIO;
}

// The temporary file being written, for atomic_write_remove_in_flight: a
// second stop signal exits at once, from another thread, and must not leave
// it behind. The name is stored before the flag is set and the flag cleared
// before the name changes, so the remover reads either nothing or a whole name.
static char in_flight_path[4096];
static atomic_int in_flight;

static void in_flight_begin(const char *tmp) {
    atomic_store(&in_flight, 0);
    if (strlen(tmp) < sizeof(in_flight_path)) {
        memcpy(in_flight_path, tmp, strlen(tmp) + 1);
        atomic_store(&in_flight, 1);
    }
}

void atomic_write_remove_in_flight(void) {
    if (atomic_load(&in_flight)) {
        unlink(in_flight_path); // async-signal-safe; gone already after the rename: harmless
    }
}

static void write_atomic(const char *path, file_writer_fn writer, const void *ctx,
                         int checksummed) {
    refuse_non_file(path);
    size_t n = strlen(path) + 8;
    char *tmp = malloc_check(n, "temporary file name");
    snprintf(tmp, n, "%s.tmp", path);
    in_flight_begin(tmp);
    Sink sink = {open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), 0, 0,
                 checksum_initial()};
    if (sink.fd < 0) {
        atomic_store(&in_flight, 0);
        fatal("%s: cannot create the temporary file %s: %s", path, tmp, strerror(errno));
    }
    cookie_io_functions_t io = {NULL, sink_write, NULL, NULL};
    FILE *f = fopencookie(&sink, "w", io);
    if (f == NULL) {
        atomic_store(&in_flight, 0);
        int e = errno;
        close(sink.fd);
        unlink(tmp);
        fatal("%s: cannot open a stream on %s: %s", path, tmp, strerror(e));
    }
    writer(f, tmp, ctx);
    int error = fclose(f) != 0 && sink.error == 0 ? errno : sink.error; // flushes into the sink
    if (error == 0 && checksummed) {
        error = store_checksum(&sink);
    }
    if (error == 0 && fsync(sink.fd) != 0) {
        error = errno;
    }
    if (close(sink.fd) != 0 && error == 0) {
        error = errno;
    }
    if (error == 0 && rename(tmp, path) != 0) {
        error = errno;
    }
    atomic_store(&in_flight, 0);
    if (error != 0) {
        unlink(tmp);
        fatal("%s: write failed: %s (%s removed; earlier files are untouched)", path,
              strerror(error), tmp);
    }
    fsync_directory_of(path);
    free(tmp);
}

void write_file_atomic(const char *path, file_writer_fn writer, const void *ctx) {
    write_atomic(path, writer, ctx, 0);
}

void write_file_atomic_checksummed(const char *path, file_writer_fn writer, const void *ctx) {
    write_atomic(path, writer, ctx, 1);
}
