// The one writer of every output file: PATH.tmp, written, flushed, fsynced,
// renamed over PATH, then the folder fsynced, so a reader never sees a
// half-written file. Any failure (no such folder, a read-only one, PATH a
// folder or a device, ENOSPC, EIO, EFBIG) removes PATH.tmp, leaves PATH and
// every other file as they were, and exits naming the file and the error.
#ifndef FOLDNORM_ATOMIC_WRITE_H
#define FOLDNORM_ATOMIC_WRITE_H

#include <stdio.h>

// Writes the content to f (with fwrite_check; path names the temporary file).
// A write error never stops the writer half-way: it is kept and reported by
// write_file_atomic after the writer returns.
typedef void (*file_writer_fn)(FILE *f, const char *path, const void *ctx);

void write_file_atomic(const char *path, file_writer_fn writer, const void *ctx);
// The same for a header format (256 int32 slots first): also stores the
// CRC32 kind and value in header slots 254-255 (llmc/core/checksum.h).
void write_file_atomic_checksummed(const char *path, file_writer_fn writer, const void *ctx);

// Removes the temporary file of a write in progress, if any (a second stop
// signal's exit; async-signal-safe: one atomic load and unlink(2)).
void atomic_write_remove_in_flight(void);

#endif
