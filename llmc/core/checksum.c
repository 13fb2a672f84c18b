#include "checksum.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

// CRC-32 as zlib's crc32() and Python's zlib.crc32 compute it (reflected
// polynomial 0xEDB88320, initial value and final xor 0xFFFFFFFF), written
// here so that no build needs zlib (a GPU image may lack its headers).
// Slicing by 16: crc_table[k][b] is the CRC of byte b followed by k zero
// bytes, so 16 input bytes cost 16 independent table reads (about zlib's speed).
static uint32_t crc_table[16][256];
static pthread_once_t crc_table_once = PTHREAD_ONCE_INIT;

static void crc_table_fill(void) {
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int bit = 0; bit < 8; bit++) {
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        }
        crc_table[0][b] = c;
    }
    for (int k = 1; k < 16; k++) {
        for (int b = 0; b < 256; b++) {
            uint32_t prev = crc_table[k - 1][b];
            crc_table[k][b] = crc_table[0][prev & 0xFF] ^ (prev >> 8);
        }
    }
}

// crc: a finished CRC (0 for no input yet), continued over n bytes
static uint32_t crc32_continue(uint32_t crc, const unsigned char *p, size_t n) {
    pthread_once(&crc_table_once, crc_table_fill);
    uint32_t c = ~crc;
    while (n >= 16) {
        uint32_t w[4];
        memcpy(w, p, 16);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        for (int i = 0; i < 4; i++) w[i] = __builtin_bswap32(w[i]);
#endif
        w[0] ^= c;
        c = 0;
        for (int i = 0; i < 4; i++) {
            for (int j = 0; j < 4; j++) {
                c ^= crc_table[15 - 4 * i - j][(w[i] >> (8 * j)) & 0xFF];
            }
        }
        p += 16;
        n -= 16;
    }
    while (n-- > 0) {
        c = crc_table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    }
    return ~c;
}

uint32_t checksum_initial(void) {
    return 0;
}

uint32_t checksum_update(uint32_t crc, uint64_t offset, const void *data, size_t n) {
    const unsigned char *p = data;
    const uint64_t field_end = CHECKSUM_FIELD_OFFSET + 8;
    if (offset < field_end && offset + n > CHECKSUM_FIELD_OFFSET) {
        // the part before the field, the field as zeros, the part after it
        size_t before = offset < CHECKSUM_FIELD_OFFSET ? (size_t)(CHECKSUM_FIELD_OFFSET - offset) : 0;
        crc = crc32_continue(crc, p, before);
        uint64_t field_start = offset + before;
        size_t in_field = (size_t)(field_end - field_start);
        if (in_field > n - before) {
            in_field = n - before;
        }
        static const unsigned char zeros[8] = {0};
        crc = crc32_continue(crc, zeros, in_field);
        size_t done = before + in_field;
        return crc32_continue(crc, p + done, n - done);
    }
    return crc32_continue(crc, p, n);
}

int checksum_verify(Reader *r, const int32_t header[CHECKSUM_HEADER_INTS], char *err,
                    size_t err_bytes) {
    int32_t kind = header[CHECKSUM_SLOT_KIND];
    if (kind == 0) {
        return 0;
    }
    if (kind != CHECKSUM_KIND_CRC32) {
        return input_error(err, err_bytes,
                           "unknown checksum kind %d in header slot %d (expected 0 or %d)", kind,
                           CHECKSUM_SLOT_KIND, CHECKSUM_KIND_CRC32);
    }
    const size_t header_bytes = CHECKSUM_HEADER_INTS * sizeof(int32_t);
    if (r->pos != header_bytes) {
        return input_error(err, err_bytes, "checksum: the reader is not after the header");
    }
    uint32_t crc = checksum_update(checksum_initial(), 0, header, header_bytes);
    if (r->file == NULL) {
        crc = checksum_update(crc, header_bytes, r->data + r->pos, reader_left(r));
    } else {
        unsigned char buf[1 << 16];
        uint64_t offset = header_bytes;
        while (offset < r->size) {
            size_t want = r->size - offset < sizeof(buf) ? (size_t)(r->size - offset) : sizeof(buf);
            size_t got = fread(buf, 1, want, r->file);
            if (got != want) {
                return input_error(err, err_bytes, "read error while checking the checksum: %s",
                                   ferror(r->file) ? strerror(errno) : "the file shrank");
            }
            crc = checksum_update(crc, offset, buf, got);
            offset += got;
        }
        if (fseek(r->file, (long)header_bytes, SEEK_SET) != 0) {
            return input_error(err, err_bytes, "cannot seek: %s", strerror(errno));
        }
    }
    uint32_t stored = (uint32_t)header[CHECKSUM_SLOT_CRC];
    if (crc != stored) {
        return input_error(err, err_bytes,
                           "checksum mismatch: stored %08x, computed %08x (the file is corrupt)",
                           stored, crc);
    }
    return 0;
}

void checksum_fix_memory(unsigned char *data, size_t size) {
    int32_t kind;
    if (size < CHECKSUM_HEADER_INTS * sizeof(int32_t)) {
        return;
    }
    memcpy(&kind, data + CHECKSUM_FIELD_OFFSET, sizeof(kind));
    if (kind != CHECKSUM_KIND_CRC32) {
        return;
    }
    uint32_t crc = checksum_update(checksum_initial(), 0, data, size);
    memcpy(data + CHECKSUM_FIELD_OFFSET + 4, &crc, sizeof(crc));
}
