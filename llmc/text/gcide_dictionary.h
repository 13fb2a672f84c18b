// The GCIDE dictionary read whole (gzip or plain dictd text), its parsable
// entries sorted by headword (dictionary order within one), and the
// train/test split by headword that tools/gcide_to_alpaca and
// tools/gcide_to_mc share, so that the multiple-choice set holds out exactly
// the fine-tuning data's test words.
#ifndef FOLDNORM_GCIDE_DICTIONARY_H
#define FOLDNORM_GCIDE_DICTIONARY_H

#include <stddef.h>

#include "gcide.h"

typedef struct {
    GcideEntry *entries; // sorted by headword; a headword's entries are adjacent
    size_t count;        // parsable entries
    size_t seen;         // entries in the dictionary
} GcideDictionary;

// Reads path (fatal naming it on errors), keeping entries whose first sense
// has at least min_definition_bytes.
void gcide_dictionary_load(GcideDictionary *d, const char *path, size_t min_definition_bytes);
void gcide_dictionary_free(GcideDictionary *d);

// The end of the headword group starting at entry i.
size_t gcide_headword_end(const GcideDictionary *d, size_t i);

// Whether a headword is held out: a hash of the lower-cased word below
// test_fraction of the range.
int gcide_headword_is_test(const char *headword, double test_fraction);

#endif
