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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_write.h"
#include "core/cli.h"
#include "text/gcide_dictionary.h"
#include "core/utils.h"

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
    GcideDictionary dict;
    gcide_dictionary_load(&dict, positional[0], min_definition_bytes);
    const GcideDictionary *list = &dict;

    cJSON *train = cJSON_CreateArray(), *test = cJSON_CreateArray();
    if (train == NULL || test == NULL) fatal("out of memory");
    size_t headwords = 0, test_headwords = 0;
    for (size_t i = 0; i < list->count && (max_headwords == 0 || headwords < max_headwords);) {
        const size_t j = gcide_headword_end(list, i);
        const int is_test = gcide_headword_is_test(list->entries[i].headword, test_fraction);
        add_headword(is_test ? test : train, list->entries + i, j - i);
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
           positional[0], list->seen, list->count, headwords, headwords - test_headwords, test_headwords,
           positional[1], cJSON_GetArraySize(train), cJSON_GetArraySize(test));
    cJSON_Delete(train);
    cJSON_Delete(test);
    gcide_dictionary_free(&dict);
    return 0;
}
