// GCIDE read whole, sorted by headword, split by headword (gcide_dictionary.h).
#include "gcide_dictionary.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/utils.h"

typedef struct {
    GcideEntry *entries;
    size_t count, cap, min_definition_bytes;
} EntryList;

static void collect_entry(const char *text, size_t len, void *ctx) {
    EntryList *list = ctx;
    if (list->count == list->cap) {
        list->cap = list->cap ? 2 * list->cap : 4096;
        GcideEntry *grown = realloc(list->entries, list->cap * sizeof(GcideEntry));
        if (grown == NULL) fatal("out of memory for %zu dictionary entries", list->cap);
        list->entries = grown;
    }
    if (gcide_entry_parse(text, len, list->min_definition_bytes, &list->entries[list->count]) == 0) {
        list->count++;
    }
}

// The whole dictionary as text; gzread passes plain files through unchanged.
static char *read_dictionary(const char *path, size_t *len) {
    gzFile f = gzopen(path, "rb");
    if (f == NULL) fatal("%s: cannot open", path);
    size_t cap = 1 << 24, n = 0;
    char *text = malloc_check(cap, "the dictionary text");
    for (;;) {
        if (n == cap) {
            if (cap > ((size_t)1 << 32)) fatal("%s: more than 4 GiB of text: not a dictionary", path);
            cap *= 2;
            char *grown = realloc(text, cap);
            if (grown == NULL) fatal("%s: out of memory", path);
            text = grown;
        }
        unsigned chunk = cap - n > (1u << 30) ? (1u << 30) : (unsigned)(cap - n);
        int got = gzread(f, text + n, chunk);
        if (got < 0) {
            int code;
            fatal("%s: corrupt compressed data: %s", path, gzerror(f, &code));
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    gzclose(f);
    if (memchr(text, '\0', n) != NULL) fatal("%s: holds NUL bytes: not a dictd text", path);
    *len = n;
    return text;
}

static uint32_t headword_hash(const char *w) { // FNV-1a of the lower-cased word
    uint32_t h = 2166136261u;
    for (; *w; w++) h = (h ^ (uint32_t)tolower((unsigned char)*w)) * 16777619u;
    return h;
}

// Entries ordered by headword, dictionary order within one (a word can recur
// apart from its first entries), so that each headword becomes one group.
static int compare_entry_pointers(const void *a, const void *b) {
    const GcideEntry *x = *(GcideEntry *const *)a, *y = *(GcideEntry *const *)b;
    int c = strcmp(x->headword, y->headword);
    return c != 0 ? c : (x < y ? -1 : x > y);
}

void gcide_dictionary_load(GcideDictionary *d, const char *path, size_t min_definition_bytes) {
    size_t len;
    char *text = read_dictionary(path, &len);
    EntryList list = {.min_definition_bytes = min_definition_bytes};
    d->seen = gcide_split_entries(text, len, collect_entry, &list);
    free(text);
    if (list.count == 0) {
        fatal("%s: no dictionary entries with a definition (%zu entries seen)", path, d->seen);
    }
    // sorted through pointers into the unmoved array, whose addresses give the tie-break
    GcideEntry **order = malloc_check(list.count * sizeof(GcideEntry *), "the entry order");
    for (size_t i = 0; i < list.count; i++) order[i] = &list.entries[i];
    qsort(order, list.count, sizeof(GcideEntry *), compare_entry_pointers);
    d->entries = malloc_check(list.count * sizeof(GcideEntry), "the sorted entries");
    for (size_t i = 0; i < list.count; i++) d->entries[i] = *order[i];
    d->count = list.count;
    free(order);
    free(list.entries);
}

void gcide_dictionary_free(GcideDictionary *d) {
    free(d->entries);
    d->entries = NULL;
    d->count = 0;
}

size_t gcide_headword_end(const GcideDictionary *d, size_t i) {
    size_t j = i + 1;
    while (j < d->count && strcmp(d->entries[j].headword, d->entries[i].headword) == 0) j++;
    return j;
}

int gcide_headword_is_test(const char *headword, double test_fraction) {
    return headword_hash(headword) < (uint32_t)(test_fraction * 4294967296.0);
}
