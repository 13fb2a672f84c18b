#include "gcide.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

// ---------------------------------------------------------------------------
// splitting the dictionary into entries

static const char *line_end(const char *p, const char *end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    return nl != NULL ? nl : end;
}

// An unindented line holding " \...\" (the headword and its pronunciation).
static int is_headword_line(const char *line, const char *eol) {
    if (line == eol || *line == ' ' || *line == '\t') return 0;
    for (const char *p = line; p + 1 < eol; p++) {
        if (p[0] == ' ' && p[1] == '\\') return memchr(p + 2, '\\', (size_t)(eol - p - 2)) != NULL;
    }
    return 0;
}

static int is_blank(const char *line, const char *eol) {
    for (; line < eol; line++) {
        if (!isspace((unsigned char)*line)) return 0;
    }
    return 1;
}

size_t gcide_split_entries(const char *text, size_t len,
                           void (*visit)(const char *entry, size_t entry_len, void *ctx), void *ctx) {
    const char *end = text + len, *entry = NULL;
    size_t count = 0;
    int previous_blank = 1;
    for (const char *line = text; line < end;) {
        const char *eol = line_end(line, end);
        if (previous_blank && is_headword_line(line, eol)) {
            if (entry != NULL) visit(entry, (size_t)(line - entry), ctx);
            entry = line;
            count++;
        }
        previous_blank = is_blank(line, eol);
        line = eol < end ? eol + 1 : end;
    }
    if (entry != NULL) visit(entry, (size_t)(end - entry), ctx);
    return count;
}

// ---------------------------------------------------------------------------
// one entry

static const char *const POS_NAMES[][2] = {
    {"n.", "noun"},
    {"n. pl.", "plural noun"},
    {"a.", "adjective"},
    {"adj.", "adjective"},
    {"a. & n.", "adjective and noun"},
    {"n. & a.", "noun and adjective"},
    {"adv.", "adverb"},
    {"v. t.", "transitive verb"},
    {"v. i.", "intransitive verb"},
    {"v. t. & i.", "transitive and intransitive verb"},
    {"prep.", "preposition"},
    {"conj.", "conjunction"},
    {"interj.", "interjection"},
    {"pron.", "pronoun"},
    {"p. p.", "past participle"},
    {"p. a.", "participial adjective"},
};

const char *gcide_part_of_speech_name(const char *abbreviation) {
    for (size_t i = 0; i < sizeof(POS_NAMES) / sizeof(POS_NAMES[0]); i++) {
        if (strcmp(abbreviation, POS_NAMES[i][0]) == 0) return POS_NAMES[i][1];
    }
    return NULL;
}

// Copies src[0..n) into dst (dst_bytes) with runs of white space as one
// space, GCIDE's {cross reference} braces dropped; -1 when it does not fit.
static int copy_collapsed(char *dst, size_t dst_bytes, const char *src, size_t n) {
    size_t out = 0;
    int pending_space = 0;
    for (size_t i = 0; i < n; i++) {
        char c = src[i];
        if (c == '{' || c == '}') continue;
        if (isspace((unsigned char)c)) {
            pending_space = out > 0;
            continue;
        }
        if (out + (size_t)pending_space + 2 > dst_bytes) return -1;
        if (pending_space) dst[out++] = ' ';
        pending_space = 0;
        dst[out++] = c;
    }
    dst[out] = '\0';
    return 0;
}

// Index just past a bracket group opening at s[i] == '[' (nested brackets
// balanced), or n when it never closes.
static size_t skip_bracket(const char *s, size_t i, size_t n) {
    int depth = 0;
    for (; i < n; i++) {
        if (s[i] == '[') depth++;
        if (s[i] == ']' && --depth == 0) return i + 1;
    }
    return n;
}

static int valid_headword(const char *w) {
    if (!isalpha((unsigned char)w[0])) return 0;
    for (; *w; w++) {
        if (!isalpha((unsigned char)*w) && *w != ' ' && *w != '-' && *w != '\'') return 0;
    }
    return 1;
}

// Cuts the one-line body down to the first sense: no sense number, no
// "(Anat.)" labels, nothing from the first source tag "[", citation " --",
// example "; as," or next sense on; ends with a full stop.
static void first_sense(char *d) {
    char *s = d;
    if (s[0] == '1' && s[1] == '.' && s[2] == ' ') s += 3;
    while (*s == '(') { // field labels such as (Anat.) or (Zool.)
        char *close = strchr(s, ')');
        if (close == NULL) break;
        s = close + 1;
        while (*s == ' ') s++;
    }
    memmove(d, s, strlen(s) + 1);
    const char *cuts[] = {"[", " --", "; as,", " 2. "};
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        char *at = strstr(d, cuts[i]);
        if (at != NULL) *at = '\0';
    }
    size_t n = strlen(d);
    while (n > 0 && (d[n - 1] == ' ' || d[n - 1] == ';' || d[n - 1] == ',' || d[n - 1] == ':')) {
        d[--n] = '\0';
    }
    if (n > 0 && d[n - 1] != '.' && d[n - 1] != '?' && d[n - 1] != '!' && n + 1 < 1024) {
        d[n] = '.';
        d[n + 1] = '\0';
    }
}

int gcide_entry_parse(const char *entry, size_t len, size_t min_definition_bytes, GcideEntry *out) {
    memset(out, 0, sizeof(*out));
    const char *end = entry + len, *eol = line_end(entry, end);
    // headword: the text before " \"
    const char *pron = NULL;
    for (const char *p = entry; p + 1 < eol; p++) {
        if (p[0] == ' ' && p[1] == '\\') {
            pron = p;
            break;
        }
    }
    if (pron == NULL || (size_t)(pron - entry) >= sizeof(out->headword)) return -1;
    memcpy(out->headword, entry, (size_t)(pron - entry));
    if (!valid_headword(out->headword)) return -1;
    // part of speech: after the pronunciation, an optional "(respelling)" and
    // alternate spellings "Other \Oth"er\,", up to '[', ';', '(' or the line's end
    const char *pos = memchr(pron + 2, '\\', (size_t)(eol - pron - 2));
    if (pos == NULL) return -1;
    pos++;
    for (;;) {
        while (pos < eol && (*pos == ' ' || *pos == ',')) pos++;
        const char *alt_pron = NULL;
        for (const char *q = pos; q + 1 < eol && *q != ','; q++) {
            if (q[0] == ' ' && q[1] == '\\') alt_pron = q + 2;
        }
        if (pos < eol && *pos == '(') {
            const char *close = memchr(pos, ')', (size_t)(eol - pos));
            if (close == NULL) return -1;
            pos = close + 1;
        } else if (alt_pron != NULL && memchr(alt_pron, '\\', (size_t)(eol - alt_pron)) != NULL) {
            pos = (const char *)memchr(alt_pron, '\\', (size_t)(eol - alt_pron)) + 1;
        } else {
            break;
        }
    }
    const char *pos_end = pos;
    while (pos_end < eol && *pos_end != '[' && *pos_end != ';' && *pos_end != '(') pos_end++;
    char abbreviation[32];
    if (copy_collapsed(abbreviation, sizeof(abbreviation), pos, (size_t)(pos_end - pos)) != 0) return -1;
    size_t an = strlen(abbreviation);
    if (an > 0 && abbreviation[an - 1] == ',') abbreviation[an - 1] = '\0';
    const char *name = gcide_part_of_speech_name(abbreviation);
    if (name == NULL) return -1;
    snprintf(out->part_of_speech, sizeof(out->part_of_speech), "%s", name);
    // body: after the part of speech, an etymology "[...]" skipped, then one line
    size_t n = (size_t)(end - pos_end), i = 0;
    while (i < n && pos_end[i] != '\n' && pos_end[i] != '[') i++;
    if (i < n && pos_end[i] == '[') i = skip_bracket(pos_end, i, n);
    while (i < n && pos_end[i] != '\n') i++; // the rest of the headword line: labels, inflections
    if (copy_collapsed(out->definition, sizeof(out->definition), pos_end + i, n - i) != 0) {
        // a long entry: its first sense still fits if the copy is cut early
        size_t cut = n - i < sizeof(out->definition) - 1 ? n - i : sizeof(out->definition) - 1;
        while (cut > 0 && copy_collapsed(out->definition, sizeof(out->definition), pos_end + i, cut)) {
            cut /= 2;
        }
    }
    first_sense(out->definition);
    if (strlen(out->definition) < min_definition_bytes || strncmp(out->definition, "See ", 4) == 0 ||
        strncmp(out->definition, "Same as ", 8) == 0) {
        return -1;
    }
    return 0;
}
