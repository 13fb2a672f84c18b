// Real instruction data made here: GCIDE dictionary entries (Debian
// dict-gcide) into Alpaca-format JSON for supervised fine-tuning (the input of
// bin/alpaca_to_sft). Three tasks per headword:
//   define:  "Define the word "X"."                  -> its first sense
//   reverse: "Which word has this meaning?" + sense  -> X
//   part of speech: "What part of speech is "X"?"    -> "noun", "adjective or noun", ...
// Train and test are split by headword (a hash of the lower-cased word), so
// no test word's definition is seen in training.
//   gcide_to_alpaca [-tf TEST_FRACTION] [-nh MAX_HEADWORDS] [-mb MIN_DEF_BYTES] DICT OUT_PREFIX
// DICT: gcide.dict.dz (dictzip = gzip) or the plain dictd text. Writes
// OUT_PREFIX_train.json and OUT_PREFIX_test.json atomically.
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/atomic_write.h"
#include "core/cli.h"
#include "text/gcide.h"
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

static void add_record(cJSON *list, const char *instruction, const char *input, const char *output) {
    cJSON *r = cJSON_CreateObject();
    if (r == NULL || !cJSON_AddStringToObject(r, "instruction", instruction) ||
        !cJSON_AddStringToObject(r, "input", input) || !cJSON_AddStringToObject(r, "output", output)) {
        fatal("out of memory building the JSON records");
    }
    cJSON_AddItemToArray(list, r);
}

// The records of one headword: entries[0..n) share it.
static void add_headword(cJSON *list, const GcideEntry *entries, size_t n) {
    const char *word = entries[0].headword;
    char instruction[256], output[256];
    snprintf(instruction, sizeof(instruction), "Define the word \"%s\".", word);
    add_record(list, instruction, "", entries[0].definition);
    add_record(list, "Which word has this meaning?", entries[0].definition, word);
    // every distinct part of speech the dictionary gives the word, in its order
    size_t used = 0;
    output[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int seen = 0;
        for (size_t j = 0; j < i; j++) seen |= strcmp(entries[j].part_of_speech, entries[i].part_of_speech) == 0;
        if (seen) continue;
        int w = snprintf(output + used, sizeof(output) - used, "%s%s", used ? " or " : "",
                         entries[i].part_of_speech);
        if (w < 0 || (size_t)w >= sizeof(output) - used) break;
        used += (size_t)w;
    }
    snprintf(instruction, sizeof(instruction), "What part of speech is the word \"%s\"?", word);
    add_record(list, instruction, "", output);
}

typedef struct {
    const cJSON *records;
} JsonFile;

static void write_json(FILE *f, const char *path, const void *ctx) {
    char *text = cJSON_PrintUnformatted(((const JsonFile *)ctx)->records);
    if (text == NULL) fatal("%s: out of memory printing the JSON", path);
    fwrite_check(text, 1, strlen(text), f, path);
    fwrite_check("\n", 1, 1, f, path);
    free(text);
}

int main(int argc, char **argv) {
    double test_fraction = 0.05;
    int max_headwords_flag = 0, min_definition_flag = 20;
    CliFlag flags[] = {
        {"-tf", CLI_DOUBLE, &test_fraction, 0, 1,
         "fraction of headwords held out for test (default 0.05)", NULL, CLI_OPEN_HI, 0},
        {"-nh", CLI_INT, &max_headwords_flag, 0, 1000000000,
         "at most this many headwords, 0 = all (default 0)", NULL, 0, 0},
        {"-mb", CLI_INT, &min_definition_flag, 1, 512,
         "shortest definition kept, in bytes (default 20)", NULL, 0, 0},
    };
    CliSpec spec = {
        .program = "gcide_to_alpaca",
        .synopsis = "[options] DICT OUT_PREFIX",
        .about = "  DICT        GCIDE in dictd form (/usr/share/dictd/gcide.dict.dz, or its text)\n"
                 "  OUT_PREFIX  writes OUT_PREFIX_train.json and OUT_PREFIX_test.json (Alpaca format)\n",
        .flags = flags,
        .num_flags = CLI_COUNT(flags),
        .min_positional = 2,
        .max_positional = 2,
    };
    const char *positional[2];
    cli_parse(&spec, argc, argv, positional);
    const size_t max_headwords = (size_t)max_headwords_flag;
    const size_t min_definition_bytes = (size_t)min_definition_flag;
    size_t len;
    char *text = read_dictionary(positional[0], &len);
    EntryList list = {.min_definition_bytes = min_definition_bytes};
    size_t entries = gcide_split_entries(text, len, collect_entry, &list);
    free(text);
    if (list.count == 0) fatal("%s: no dictionary entries with a definition (%zu entries seen)", positional[0], entries);

    // sorted through pointers into the unmoved array, whose addresses give the tie-break
    GcideEntry **order = malloc_check(list.count * sizeof(GcideEntry *), "the entry order");
    for (size_t i = 0; i < list.count; i++) order[i] = &list.entries[i];
    qsort(order, list.count, sizeof(GcideEntry *), compare_entry_pointers);
    GcideEntry *sorted = malloc_check(list.count * sizeof(GcideEntry), "the sorted entries");
    for (size_t i = 0; i < list.count; i++) sorted[i] = *order[i];
    free(order);
    free(list.entries);
    list.entries = sorted;

    cJSON *train = cJSON_CreateArray(), *test = cJSON_CreateArray();
    if (train == NULL || test == NULL) fatal("out of memory");
    uint32_t test_below = (uint32_t)(test_fraction * 4294967296.0);
    size_t headwords = 0, test_headwords = 0;
    for (size_t i = 0; i < list.count && (max_headwords == 0 || headwords < max_headwords);) {
        size_t j = i + 1;
        while (j < list.count && strcmp(list.entries[j].headword, list.entries[i].headword) == 0) j++;
        int is_test = headword_hash(list.entries[i].headword) < test_below;
        add_headword(is_test ? test : train, list.entries + i, j - i);
        test_headwords += (size_t)is_test;
        headwords++;
        i = j;
    }
    if (cJSON_GetArraySize(train) == 0 || cJSON_GetArraySize(test) == 0) {
        fatal("%s: %zu headwords give an empty %s split: use more headwords or another -f", positional[0],
              headwords, cJSON_GetArraySize(train) == 0 ? "train" : "test");
    }
    char path[4096];
    const char *splits[2] = {"train", "test"};
    const cJSON *lists[2] = {train, test};
    for (int s = 0; s < 2; s++) {
        int n = snprintf(path, sizeof(path), "%s_%s.json", positional[1], splits[s]);
        if (n < 0 || (size_t)n >= sizeof(path)) fatal("%s: output prefix too long", positional[1]);
        JsonFile file = {lists[s]};
        write_file_atomic(path, write_json, &file);
    }
    printf("%s: %zu entries, %zu usable; %zu headwords: %zu train, %zu test -> %s_{train,test}.json "
           "(%d + %d records)\n",
           positional[0], entries, list.count, headwords, headwords - test_headwords, test_headwords,
           positional[1], cJSON_GetArraySize(train), cJSON_GetArraySize(test));
    cJSON_Delete(train);
    cJSON_Delete(test);
    free(list.entries);
    return 0;
}
