// CRC32 (zlib's, computed here without zlib) of the files foldnorm writes with
// a 256-int32 header (GPT-2 and vision model files, training states). Slot 254 holds the kind
// (CHECKSUM_KIND_CRC32; 0 = no checksum, as in llm.c's files), slot 255 the
// CRC32 of the whole file read with slots 254 and 255 as zero. llm.c reads
// header slots 0-7 only, so it still loads these files. docs/formats.md.
#ifndef FOLDNORM_CHECKSUM_H
#define FOLDNORM_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

#include "reader.h"

#define CHECKSUM_HEADER_INTS 256
#define CHECKSUM_SLOT_KIND 254
#define CHECKSUM_SLOT_CRC 255
// the bytes "CRC1": a single flipped bit cannot turn it into 0 (no checksum)
#define CHECKSUM_KIND_CRC32 0x31435243
// byte offset of slot 254 (the 8 bytes of slots 254-255 count as zero in the CRC)
#define CHECKSUM_FIELD_OFFSET (CHECKSUM_SLOT_KIND * 4)

// Continues crc over n bytes at file offset `offset`, the checksum slots read as zero.
uint32_t checksum_update(uint32_t crc, uint64_t offset, const void *data, size_t n);
// The CRC32 of an empty input (the starting value of checksum_update).
uint32_t checksum_initial(void);

// Verifies the checksum of a header format, if its header has one. The reader
// stands right after the header (already read into header); reads the rest of
// the input and returns to where it stood. 0 if the header has no checksum
// (slot 254 zero) or it matches; -1 with "checksum mismatch: stored X,
// computed Y" or an unknown kind in err. Never exits.
int checksum_verify(Reader *r, const int32_t header[CHECKSUM_HEADER_INTS], char *err,
                    size_t err_bytes);

// Stores the right CRC into a file image in memory whose header has the CRC32
// kind (the fuzz targets, so mutated inputs reach the parsers); else nothing.
void checksum_fix_memory(unsigned char *data, size_t size);

#endif
