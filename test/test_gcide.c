// llmc/text/gcide.c on entries in GCIDE's dictd layout (copied by hand from the
// dictionary's forms: sense numbers, field labels, etymologies over two lines,
// respellings, alternate spellings, citations, cross references), with the
// expected fields written by reading them, not by running the parser.
#include <stdio.h>
#include <string.h>

#include "core/cli.h"
#include "text/gcide.h"

static int failures = 0;

static void expect_entry(const char *text, const char *headword, const char *pos, const char *definition) {
    GcideEntry e;
    int rc = gcide_entry_parse(text, strlen(text), 20, &e);
    if (definition == NULL) {
        if (rc == 0) {
            printf("FAIL %.30s...: parsed, expected a rejection (got '%s')\n", text, e.definition);
            failures++;
        } else {
            printf("ok   %s rejected\n", headword);
        }
        return;
    }
    if (rc != 0 || strcmp(e.headword, headword) != 0 || strcmp(e.part_of_speech, pos) != 0 ||
        strcmp(e.definition, definition) != 0) {
        printf("FAIL %s: rc %d, got '%s' / '%s' / '%s'\n     expected '%s' / '%s' / '%s'\n", headword, rc,
               e.headword, e.part_of_speech, e.definition, headword, pos, definition);
        failures++;
        return;
    }
    printf("ok   %s (%s): %s\n", headword, pos, definition);
}

static void count_entry(const char *text, size_t len, void *ctx) {
    (void)text;
    (void)len;
    (*(int *)ctx)++;
}

int main(int argc, char **argv) {
    CliSpec spec = {.program = "test_gcide", .synopsis = "",
                    .about = "The GCIDE entry parser (llmc/text/gcide.c) on hand-checked entries.\n"};
    cli_parse(&spec, argc, argv, NULL);
    expect_entry("Abdomen \\Ab*do\"men\\, n. [L. abdomen (a word of uncertain\n"
                 "   etymol.): cf. F. abdomen.]\n"
                 "   1. (Anat.) The belly, or that part of the body between the\n"
                 "      thorax and the pelvis.\n      [1913 Webster]\n\n"
                 "   2. (Zool.) The posterior section of the body.\n      [1913 Webster]\n",
                 "Abdomen", "noun", "The belly, or that part of the body between the thorax and the pelvis.");
    expect_entry("Abdication \\Ab`di*ca\"tion\\, n. [L. abdicatio: cf. F.\n   abdication.]\n"
                 "   The act of abdicating; the renunciation of a high office,\n"
                 "   dignity, or trust, by its holder; as, abdication of the\n   throne.\n   [1913 Webster]\n",
                 "Abdication", "noun",
                 "The act of abdicating; the renunciation of a high office, dignity, or trust, by its holder.");
    expect_entry("Abditive \\Ab\"di*tive\\, a. [L. abditivus, fr. abdere to hide.]\n"
                 "   Having the quality of hiding. [R.] --Bailey.\n   [1913 Webster]\n",
                 "Abditive", "adjective", "Having the quality of hiding.");
    expect_entry("Hatter \\Hat\"ter\\ (-t[~e]r), v. t. [Prov. E., to entangle; cf.\n"
                 "   LG. verhaddern.]\n   To tire or worry greatly; -- with out. [Obs.] --Dryden.\n   [1913 Webster]\n",
                 "Hatter", "transitive verb", "To tire or worry greatly.");
    expect_entry("Hypaethral \\Hy*p[ae]\"thral\\, Hypethral \\Hy*pe\"thral\\, a. [L.\n   hypaethrus.]\n"
                 "   Wholly or partly open to the sky; having no roof.\n   [1913 Webster]\n",
                 "Hypaethral", "adjective", "Wholly or partly open to the sky; having no roof.");
    expect_entry("Abdominales \\Ab*dom`i*na\"les\\, n. pl. [NL., masc. pl.] (Zool.)\n"
                 "   A group including the greater part of {fresh-water} fishes.\n   [1913 Webster]\n",
                 "Abdominales", "plural noun", "A group including the greater part of fresh-water fishes.");
    // rejected: too short, a bare cross reference, an unknown part of speech, no headword line
    expect_entry("Jabberment \\Jab\"ber*ment\\, n.\n   Jabber. [R.] --Milton.\n   [1913 Webster]\n",
                 "Jabberment", "", NULL);
    expect_entry("Abdicant \\Ab\"di*cant\\, a.\n   See {Abdicate}, to give up all right.\n", "Abdicant", "", NULL);
    expect_entry("-ol \\-ol\\ (-[=o]l) suff. [From alcohol.] (Chem.)\n   A suffix denoting an alcohol.\n",
                 "-ol", "", NULL);
    expect_entry("   indented line, not an entry at all, but long enough\n", "indented", "", NULL);

    // splitting: entries start at an unindented "\pron\" line after a blank line
    const char *dict = "00-database-info\n   header text\n\n"
                       "Abdomen \\Ab*do\"men\\, n.\n   The belly of an animal, below.\n\n"
                       "   quoted \\not\\ an entry: indented\n\n"
                       "Abdominal \\Ab*dom\"i*nal\\, a.\n   Of or pertaining to the abdomen.\n"
                       "Inline \\In*line\\, n. no blank line before: part of the previous entry\n";
    int count = 0;
    size_t n = gcide_split_entries(dict, strlen(dict), count_entry, &count);
    if (n != 2 || count != 2) {
        printf("FAIL split: %zu entries, %d visits (expected 2)\n", n, count);
        failures++;
    } else {
        printf("ok   split into 2 entries\n");
    }
    printf("%s\n", failures ? "FAIL" : "all gcide checks passed");
    return failures != 0;
}
