// Shared by the libFuzzer targets test/fuzz/fuzz_*.c (built by mk/fuzz.mk):
// each feeds its input to one parser of outside input through its
// non-exiting core and checks the error contract.
#ifndef FOLDNORM_FUZZ_H
#define FOLDNORM_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checksum.h"
#include "core/reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

// A failing parser must leave a non-empty, NUL-terminated message in err
// (which the caller cleared). FUZZ_VERBOSE=1 prints each outcome (e.g. to see
// why a seed is rejected: fuzz_x -runs=0 DIR).
static inline void fuzz_check_error(int rc, const char *err, size_t err_bytes) {
    if (rc != 0 && rc != -1) {
        abort(); // the parsers return 0 or -1
    }
    if (rc != 0 && (err[0] == '\0' || memchr(err, '\0', err_bytes) == NULL)) {
        abort();
    }
    static int verbose = -1;
    if (verbose < 0) {
        verbose = getenv("FUZZ_VERBOSE") != NULL;
    }
    if (verbose) {
        fprintf(stderr, "parse: %s\n", rc == 0 ? "ok" : err);
    }
}

// Little-endian uint32 at data[4 * i] (the inputs' parameter prefixes).
static inline uint32_t fuzz_u32(const uint8_t *data, int i) {
    const uint8_t *p = data + 4 * i;
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

// A copy of a header-format input (model file, training state) whose CRC32
// is made right when slot 254 has the CRC32 kind: almost every mutation
// breaks the stored CRC, and the parsers check it before the weights, so
// without this the fuzzer would stop at "checksum mismatch". The mismatch
// branch itself is covered by the bad-file corpus. The caller frees it.
static inline unsigned char *fuzz_copy_fixing_checksum(const uint8_t *data, size_t size) {
    unsigned char *copy = malloc(size == 0 ? 1 : size);
    if (copy == NULL) {
        abort();
    }
    memcpy(copy, data, size);
    checksum_fix_memory(copy, size);
    return copy;
}

#endif
