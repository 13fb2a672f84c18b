// A real multiple-choice eval set made here, in llm.c's eval-file format
// (llmc/gpt2/mc_eval.h; train_gpt2 -mc): for each held-out GCIDE headword
// (the test split of gcide_to_alpaca with the same -tf -nh -mb, so that the
// sft study never trains on it), the context "Definition: <its first
// sense>\nWord:" and four completions " <word>": the headword and three
// others of the same part of speech among the first -nh headwords, drawn
// with -sd, the answer at a random place. Chance is 25 %. -dh 1 draws the
// others from the held-out headwords only: a model fine-tuned on the train
// split has seen most of the first -nh headwords, and a familiar word has a
// lower loss whatever the definition, which pulls its answers to them.
//   gcide_to_mc [-tf F] [-nh N] [-mb B] [-sd SEED] [-dh 0|1] [-t T] [-vd DIR] DICT OUT.bin
// Also writes OUT.bin.txt: one line per example, "index label answer | choice | ...".
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/cli.h"
#include "core/rand.h"
#include "core/utils.h"
#include "gpt2/mc_eval.h"
#include "text/gcide_dictionary.h"
#include "text/tokenizer.h"

#define CHOICES 4

// GPT-2 BPE tokens of text as uint16 (GPT-2's ids are < 65535)
static uint16_t *encode(Tokenizer *tok, const char *text, int *len) {
    TokenList ids = {0};
    tokenizer_encode(tok, (const unsigned char *)text, strlen(text), &ids);
    uint16_t *out = malloc_check(ids.len * sizeof(uint16_t) + 1, "eval tokens");
    for (size_t i = 0; i < ids.len; i++) out[i] = (uint16_t)ids.ids[i];
    *len = (int)ids.len;
    token_list_free(&ids);
    return out;
}

int main(int argc, char **argv) {
    double test_fraction = 0.05;
    int max_headwords_flag = 0, min_definition_flag = 20;
    unsigned long long seed = 1337;
    const char *vocab_dir = "data/gpt2";
    int max_row = 1024, held_out_distractors = 0;
    CliFlag flags[] = {
        {"-tf", CLI_DOUBLE, &test_fraction, 0, 1,
         "fraction of headwords held out, as gcide_to_alpaca's (default 0.05)", NULL,
         CLI_OPEN_HI, 0},
        {"-nh", CLI_INT, &max_headwords_flag, 0, 1000000000,
         "the first this many headwords, 0 = all, as gcide_to_alpaca's (default 0)", NULL, 0, 0},
        {"-mb", CLI_INT, &min_definition_flag, 1, 512,
         "shortest definition kept, in bytes, as gcide_to_alpaca's (default 20)", NULL, 0, 0},
        {"-sd", CLI_SEED, &seed, 0, 0, "seed for the distractors and the answers' places "
         "(default 1337)", NULL, 0, 0},
        {"-dh", CLI_INT, &held_out_distractors, 0, 1,
         "the three others: 0 = any of the first -nh headwords, 1 = held-out\n"
         "headwords only, none of them in the fine-tuning data (default 0)", NULL, 0, 0},
        {"-t", CLI_INT, &max_row, 2, 65535,
         "leave out examples with a row (context + completion - 1 tokens) longer\n"
         "than this: train_gpt2 -mc needs rows within its -t (default 1024)", NULL, 0, 0},
        {"-vd", CLI_STRING, &vocab_dir, 0, 0, "GPT-2 tokenizer files (default data/gpt2)", "dir",
         0, 0},
    };
    CliSpec spec = {
        .program = "gcide_to_mc",
        .synopsis = "[options] DICT OUT.bin",
        .about = "  DICT     GCIDE in dictd form (/usr/share/dictd/gcide.dict.dz, or its text)\n"
                 "  OUT.bin  the multiple-choice eval file (llm.c's format) and OUT.bin.txt\n",
        .flags = flags, .num_flags = CLI_COUNT(flags), .min_positional = 2, .max_positional = 2,
    };
    const char *positional[2];
    cli_parse(&spec, argc, argv, positional);
    GcideDictionary dict;
    gcide_dictionary_load(&dict, positional[0], (size_t)min_definition_flag);
    // the first entry of each of the first -nh headwords
    const GcideEntry **words = malloc_check(dict.count * sizeof(GcideEntry *), "the headwords");
    size_t n = 0;
    for (size_t i = 0; i < dict.count && (max_headwords_flag == 0 || n < (size_t)max_headwords_flag);
         i = gcide_headword_end(&dict, i)) {
        words[n++] = &dict.entries[i];
    }
    Tokenizer tok;
    tokenizer_load(&tok, vocab_dir);
    Rng rng;
    rng_seed(&rng, seed);
    McExample *examples = malloc_check(n * sizeof(McExample) + 1, "the examples");
    char list_path[4200];
    snprintf(list_path, sizeof(list_path), "%s.txt", positional[1]);
    FILE *list = fopen_check(list_path, "w");
    int count = 0, too_few = 0, too_long = 0;
    for (size_t w = 0; w < n && count < 65535; w++) {
        if (!gcide_headword_is_test(words[w]->headword, test_fraction)) continue;
        // three other headwords of its part of speech (rejection sampling), all distinct
        const GcideEntry *others[CHOICES - 1];
        int found = 0;
        for (int tries = 0; found < CHOICES - 1 && tries < 100000; tries++) {
            const GcideEntry *d = words[rng_u32(&rng) % n];
            int fresh = strcmp(d->part_of_speech, words[w]->part_of_speech) == 0 &&
                        strcasecmp(d->headword, words[w]->headword) != 0 &&
                        (!held_out_distractors || gcide_headword_is_test(d->headword, test_fraction));
            for (int k = 0; k < found && fresh; k++) {
                fresh = strcasecmp(others[k]->headword, d->headword) != 0;
            }
            if (fresh) others[found++] = d;
        }
        if (found < CHOICES - 1) {
            too_few++;
            continue;
        }
        const int label = (int)(rng_u32(&rng) % CHOICES);
        const GcideEntry *choice[CHOICES];
        for (int c = 0, k = 0; c < CHOICES; c++) choice[c] = c == label ? words[w] : others[k++];
        McExample *e = &examples[count];
        char context[1200];
        snprintf(context, sizeof(context), "Definition: %s\nWord:", words[w]->definition);
        e->label = label;
        e->num_completions = CHOICES;
        e->context = encode(&tok, context, &e->context_len);
        int longest = 0;
        for (int c = 0; c < CHOICES; c++) {
            char completion[160];
            snprintf(completion, sizeof(completion), " %s", choice[c]->headword);
            e->completion[c] = encode(&tok, completion, &e->completion_len[c]);
            const int row = e->context_len + e->completion_len[c] - 1;
            longest = row > longest ? row : longest;
        }
        if (longest > max_row) { // dropped: its tokens are freed and the slot reused
            free((void *)e->context);
            for (int c = 0; c < CHOICES; c++) free((void *)e->completion[c]);
            too_long++;
            continue;
        }
        fprintf(list, "%d %d %s", count, label, words[w]->headword);
        for (int c = 0; c < CHOICES; c++) fprintf(list, " | %s", choice[c]->headword);
        fputc('\n', list);
        count++;
    }
    if (fclose(list) != 0) fatal("%s: cannot write", list_path);
    if (count == 0) fatal("%s: no held-out headword with 3 others of its part of speech", positional[0]);
    mc_eval_write(positional[1], examples, count);
    printf("%s: %zu headwords, %d held out as examples (left out: %d with too few of their part "
           "of speech, %d longer than -t %d) -> %s, %s\n", positional[0], n, count, too_few,
           too_long, max_row, positional[1], list_path);
    for (int i = 0; i < count; i++) {
        free((void *)examples[i].context);
        for (int c = 0; c < CHOICES; c++) free((void *)examples[i].completion[c]);
    }
    free(examples);
    free(words);
    tokenizer_free(&tok);
    gcide_dictionary_free(&dict);
    return 0;
}
