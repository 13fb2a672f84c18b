// Entries of the GNU Collaborative International Dictionary of English in
// its dictd text form (Debian dict-gcide: /usr/share/dictd/gcide.dict.dz):
//
//   Abdomen \Ab*do"men\, n. [L. abdomen (a word of uncertain
//      etymol.): cf. F. abdomen.]
//      1. (Anat.) The belly, or that part of the body between the
//         thorax and the pelvis. ...
//         [1913 Webster]
//
// An entry starts at an unindented line holding a "\pronunciation\" after a
// blank line. From it we take the headword, the part of speech and the first
// sense's text, cleaned of markup, labels, citations and source tags; the
// instruction data of tools/gcide_to_alpaca is made from these.
#ifndef FOLDNORM_GCIDE_H
#define FOLDNORM_GCIDE_H

#include <stddef.h>

typedef struct {
    char headword[128];
    char part_of_speech[32]; // "noun", "transitive verb", ...; "" when unknown
    char definition[1024];   // the first sense, one line; "" when none was found
} GcideEntry;

// Calls visit(entry text, its length, ctx) for each entry of the dictionary
// text[0..len) in order (the text runs up to the next entry); returns the
// number of entries.
size_t gcide_split_entries(const char *text, size_t len,
                           void (*visit)(const char *entry, size_t entry_len, void *ctx), void *ctx);

// Parses one entry. 0 when it has a headword of letters (plus space, hyphen,
// apostrophe), a known part of speech and a definition of at least
// min_definition_bytes; -1 otherwise. Never exits, never allocates.
int gcide_entry_parse(const char *entry, size_t len, size_t min_definition_bytes, GcideEntry *out);

// "n." -> "noun", "v. t." -> "transitive verb", ...; NULL when not one we map.
const char *gcide_part_of_speech_name(const char *abbreviation);

#endif
