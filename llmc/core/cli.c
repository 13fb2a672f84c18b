// The shared command-line parser (cli.h).
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

// Help lines: "  -b <int in [1, 65536]>  micro-batch size", the text from this column.
#define HELP_COLUMN 24

void cli_error(const CliSpec *spec, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "error: %s: ", spec->program);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see %s -h)\n", spec->program);
    va_end(ap);
    exit(EXIT_FAILURE);
}

// "[1, 65536]" or "(0, 10]"; integers print without a fraction.
static void format_range(char *out, size_t size, double lo, double hi, int open) {
    snprintf(out, size, "%c%.10g, %.10g%c", (open & CLI_OPEN_LO) ? '(' : '[', lo, hi,
             (open & CLI_OPEN_HI) ? ')' : ']');
}

static int range_holds(double v, double lo, double hi, int open) {
    return ((open & CLI_OPEN_LO) ? v > lo : v >= lo) && ((open & CLI_OPEN_HI) ? v < hi : v <= hi);
}

// The value column of a flag's help line: "<int in [1, 64]>", "<0|1>", "<ln|rms|cbwc>".
static void format_value(char *out, size_t size, const CliFlag *f) {
    char range[96];
    format_range(range, sizeof(range), f->lo, f->hi, f->open);
    switch (f->type) {
    case CLI_STRING:
        snprintf(out, size, "<%s>", f->value_name != NULL ? f->value_name : "text");
        break;
    case CLI_CHOICE:
    case CLI_ENUM: snprintf(out, size, "<%s>", f->value_name); break;
    case CLI_INT:
        if (f->lo == 0 && f->hi == 1) snprintf(out, size, "<0|1>");
        else snprintf(out, size, "<int in %s>", range);
        break;
    case CLI_FLOAT:
    case CLI_DOUBLE: snprintf(out, size, "<float in %s>", range); break;
    case CLI_SEED: snprintf(out, size, "<seed>"); break;
    case CLI_SWITCH: out[0] = '\0'; break;
    case CLI_LIST: snprintf(out, size, "<list of int in %s>", range); break;
    }
}

void cli_print_help(const CliSpec *spec, FILE *out) {
    fprintf(out, "usage: %s%s%s\n", spec->program, spec->synopsis[0] != '\0' ? " " : "",
            spec->synopsis);
    if (spec->about != NULL) {
        fprintf(out, "%s", spec->about);
    }
    for (int i = 0; i < spec->num_flags; i++) {
        const CliFlag *f = &spec->flags[i];
        char value[160], flag_and_value[200];
        format_value(value, sizeof(value), f);
        snprintf(flag_and_value, sizeof(flag_and_value), "%s%s%s", f->name,
                 value[0] != '\0' ? " " : "", value);
        if ((int)strlen(flag_and_value) < HELP_COLUMN) {
            fprintf(out, "  %-*s", HELP_COLUMN, flag_and_value);
        } else {
            fprintf(out, "  %s\n  %-*s", flag_and_value, HELP_COLUMN, "");
        }
        // continuation lines of the help text line up under its first line
        for (const char *s = f->help; *s != '\0';) {
            const char *eol = strchr(s, '\n');
            int len = eol != NULL ? (int)(eol - s) : (int)strlen(s);
            fprintf(out, "%.*s\n", len, s);
            s += len + (eol != NULL);
            if (*s != '\0') {
                fprintf(out, "  %-*s", HELP_COLUMN, "");
            }
        }
    }
    fprintf(out, "  %-*s%s\n", HELP_COLUMN, "-h, --help", "this help");
    if (spec->footer != NULL) {
        fprintf(out, "%s", spec->footer);
    }
}

static int in_range(double v, const CliFlag *f) {
    return range_holds(v, f->lo, f->hi, f->open);
}

static void range_error(const CliSpec *spec, const CliFlag *f, const char *text, const char *what) {
    char range[96];
    format_range(range, sizeof(range), f->lo, f->hi, f->open);
    cli_error(spec, "%s: expected %s in %s, got '%s'", f->name, what, range, text);
}

static long parse_long(const char *text, int *ok) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    *ok = errno == 0 && end != text && *end == '\0';
    return v;
}

static void parse_list(const CliSpec *spec, const CliFlag *f, const char *text, CliList *list) {
    list->count = 0;
    const char *s = text;
    while (*s != '\0') {
        while (*s == ' ' || *s == ',') s++;
        if (*s == '\0') break;
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (errno != 0 || end == s || (*end != ',' && *end != ' ' && *end != '\0') ||
            !in_range((double)v, f)) {
            range_error(spec, f, text, "comma-separated integers");
        }
        if (list->count == CLI_MAX_LIST) {
            cli_error(spec, "%s: more than %d values in '%s'", f->name, CLI_MAX_LIST, text);
        }
        list->values[list->count++] = (int)v;
        s = end;
    }
    if (list->count == 0) {
        cli_error(spec, "%s: expected at least one value, got '%s'", f->name, text);
    }
}

// The index of text among the '|'-separated words of choices; -1 if none.
static int choice_index(const char *choices, const char *text) {
    size_t n = strlen(text);
    int index = 0;
    for (const char *c = choices; n > 0; index++) {
        if (strncmp(c, text, n) == 0 && (c[n] == '|' || c[n] == '\0')) {
            return index;
        }
        c = strchr(c, '|');
        if (c == NULL) {
            return -1;
        }
        c++;
    }
    return -1;
}

// The index-th '|'-separated word of choices, into out.
static void choice_word(const char *choices, int index, char *out, size_t size) {
    const char *c = choices;
    for (int i = 0; i < index && c != NULL; i++) {
        c = strchr(c, '|');
        c = c != NULL ? c + 1 : NULL;
    }
    size_t n = c != NULL ? strcspn(c, "|") : 0;
    n = n < size ? n : size - 1;
    memcpy(out, c != NULL ? c : "", n);
    out[n] = '\0';
}

static void set_value(const CliSpec *spec, const CliFlag *f, const char *text) {
    switch (f->type) {
    case CLI_STRING: *(const char **)f->dest = text; break;
    case CLI_CHOICE:
    case CLI_ENUM: {
        const int index = choice_index(f->value_name, text);
        if (index < 0) {
            cli_error(spec, "%s: expected one of %s, got '%s'", f->name, f->value_name, text);
        }
        if (f->type == CLI_ENUM) {
            *(int *)f->dest = index;
        } else {
            *(const char **)f->dest = text;
        }
        break;
    }
    case CLI_INT: {
        int ok;
        long v = parse_long(text, &ok);
        if (!ok || !in_range((double)v, f)) {
            if (f->lo == 0 && f->hi == 1) {
                cli_error(spec, "%s: expected 0 or 1, got '%s'", f->name, text);
            }
            range_error(spec, f, text, "an integer");
        }
        *(int *)f->dest = (int)v;
        break;
    }
    case CLI_FLOAT:
    case CLI_DOUBLE: {
        char *end;
        errno = 0;
        // floats as strtof reads them (the value the program used before this parser)
        double v = f->type == CLI_FLOAT ? (double)strtof(text, &end) : strtod(text, &end);
        if (errno != 0 || end == text || *end != '\0' || !isfinite(v) || !in_range(v, f)) {
            range_error(spec, f, text, "a number");
        }
        if (f->type == CLI_FLOAT) {
            *(float *)f->dest = (float)v;
        } else {
            *(double *)f->dest = v;
        }
        break;
    }
    case CLI_SEED: {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(text, &end, 10);
        if (errno != 0 || end == text || *end != '\0' || text[0] == '-') {
            cli_error(spec, "%s: expected an integer >= 0, got '%s'", f->name, text);
        }
        *(unsigned long long *)f->dest = v;
        break;
    }
    case CLI_SWITCH: *(int *)f->dest = 1; break;
    case CLI_LIST: parse_list(spec, f, text, (CliList *)f->dest); break;
    }
}

static void print_value(const CliFlag *f) {
    printf("%s=", f->name);
    switch (f->type) {
    case CLI_STRING:
    case CLI_CHOICE: {
        const char *s = *(const char **)f->dest;
        printf("%s\n", s != NULL ? s : "(none)");
        break;
    }
    case CLI_ENUM: {
        char word[64] = "(none)";
        const int index = *(int *)f->dest;
        if (index >= 0) choice_word(f->value_name, index, word, sizeof(word));
        printf("%s\n", word);
        break;
    }
    case CLI_INT:
    case CLI_SWITCH: printf("%d\n", *(int *)f->dest); break;
    case CLI_FLOAT: printf("%g\n", (double)*(float *)f->dest); break;
    case CLI_DOUBLE: printf("%g\n", *(double *)f->dest); break;
    case CLI_SEED: printf("%llu\n", *(unsigned long long *)f->dest); break;
    case CLI_LIST: {
        const CliList *l = f->dest;
        for (int i = 0; i < l->count; i++) printf("%s%d", i > 0 ? "," : "", l->values[i]);
        printf("\n");
        break;
    }
    }
}

static CliFlag *find_flag(CliSpec *spec, const char *name) {
    for (int i = 0; i < spec->num_flags; i++) {
        if (strcmp(spec->flags[i].name, name) == 0) {
            return &spec->flags[i];
        }
    }
    return NULL;
}

int cli_given(const CliSpec *spec, const char *name) {
    for (int i = 0; i < spec->num_flags; i++) {
        if (strcmp(spec->flags[i].name, name) == 0) {
            return spec->flags[i].given > 0;
        }
    }
    return 0;
}

int cli_find_duplicate(const CliSpec *spec, int *first, int *second) {
    for (int j = 1; j < spec->num_flags; j++) {
        for (int i = 0; i < j; i++) {
            if (strcmp(spec->flags[i].name, spec->flags[j].name) == 0) {
                *first = i;
                *second = j;
                return 1;
            }
        }
    }
    return 0;
}

int cli_parse(CliSpec *spec, int argc, char **argv, const char **positional) {
    int first, second;
    if (cli_find_duplicate(spec, &first, &second)) {
        fprintf(stderr, "error: %s: flag %s is in the program's flag table twice (entries %d "
                "and %d): a bug in the program, not in the command line\n", spec->program,
                spec->flags[first].name, first, second);
        exit(EXIT_FAILURE);
    }
    int count = 0, flags_done = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        // "-" alone (stdin) and negative numbers are positional arguments
        int is_flag = !flags_done && a[0] == '-' && a[1] != '\0' && !(a[1] >= '0' && a[1] <= '9');
        if (!flags_done && strcmp(a, "--") == 0) {
            flags_done = 1;
            continue;
        }
        if (!is_flag) {
            if (count == spec->max_positional) {
                cli_error(spec, "unexpected argument '%s'", a);
            }
            positional[count++] = a;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            cli_print_help(spec, stdout);
            exit(EXIT_SUCCESS);
        }
        CliFlag *f = find_flag(spec, a);
        if (f == NULL) {
            cli_error(spec, "unknown flag '%s'", a);
        }
        f->given++;
        if (f->type == CLI_SWITCH) {
            set_value(spec, f, NULL);
            continue;
        }
        if (i + 1 >= argc) {
            cli_error(spec, "%s: missing value", a);
        }
        set_value(spec, f, argv[++i]);
    }
    const char *dry = getenv("FOLDNORM_CLI_DRY_RUN");
    if (dry != NULL && strcmp(dry, "1") == 0) {
        for (int i = 0; i < spec->num_flags; i++) {
            print_value(&spec->flags[i]);
        }
        for (int i = 0; i < count; i++) {
            printf("positional %d=%s\n", i + 1, positional[i]);
        }
        exit(EXIT_SUCCESS);
    }
    if (count < spec->min_positional) {
        cli_error(spec, "expected %d%s positional argument(s), got %d: usage: %s %s",
                  spec->min_positional, spec->max_positional > spec->min_positional ? " or more" : "",
                  count, spec->program, spec->synopsis);
    }
    return count;
}

long cli_positional_int(const CliSpec *spec, const char *what, const char *text, long lo,
                        long hi) {
    int ok;
    long v = parse_long(text, &ok);
    if (!ok || v < lo || v > hi) {
        cli_error(spec, "%s: expected an integer in [%ld, %ld], got '%s'", what, lo, hi, text);
    }
    return v;
}

double cli_positional_double(const CliSpec *spec, const char *what, const char *text, double lo,
                             double hi, int open) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !isfinite(v) || !range_holds(v, lo, hi, open)) {
        char range[96];
        format_range(range, sizeof(range), lo, hi, open);
        cli_error(spec, "%s: expected a number in %s, got '%s'", what, range, text);
    }
    return v;
}
