// GCIDE dictd text (tools/gcide_to_alpaca, llmc/text/gcide.c): the entry splitter
// and the entry parser on arbitrary bytes, read exactly within bounds; a
// parsed entry must hold a valid headword, a known part of speech and a
// NUL-terminated definition.
#include "fuzz.h"
#include "text/gcide.h"

static void check_entry(const char *text, size_t len, void *ctx) {
    (void)ctx;
    GcideEntry e;
    for (size_t min_bytes = 1; min_bytes <= 64; min_bytes *= 8) {
        if (gcide_entry_parse(text, len, min_bytes, &e) != 0) continue;
        if (memchr(e.definition, '\0', sizeof(e.definition)) == NULL ||
            memchr(e.headword, '\0', sizeof(e.headword)) == NULL || e.headword[0] == '\0' ||
            strlen(e.definition) < min_bytes || e.part_of_speech[0] == '\0') {
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gcide_split_entries((const char *)data, size, check_entry, NULL);
    return 0;
}
