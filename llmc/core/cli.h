// One command-line parser for every program: a table of flags (name, type,
// allowed range, help text, destination). Flags may come before, between or
// after the positional arguments; "--" ends the flags. -h / --help prints the
// help to stdout and exits 0; an unknown flag, a missing value, a value out
// of its range or a wrong number of positional arguments prints an error
// naming the flag (and the allowed range) to stderr and exits 1.
//
// The flag letters mean one thing in every program (llm.c's where llm.c has
// the flag); docs/cli.md lists them.
//
// FOLDNORM_CLI_DRY_RUN=1 in the environment: parse and check the flags, print
// each flag's value to stdout and exit 0 without running (test/suites/cli.sh).
#ifndef FOLDNORM_CLI_H
#define FOLDNORM_CLI_H

#include <stdio.h>

#define CLI_MAX_LIST 16

typedef enum {
    CLI_STRING, // const char *
    CLI_CHOICE, // const char *, one of the '|'-separated words in .value_name
    CLI_ENUM,   // int: the index of the chosen word among .value_name's words
                // ("ln|rms|cbwc": 0, 1, 2, in the order of the enum they name)
    CLI_INT,    // int in [lo, hi]
    CLI_FLOAT,  // float in [lo, hi] (ends left out with .open)
    CLI_DOUBLE, // double in [lo, hi] (ends left out with .open)
    CLI_SEED,   // unsigned long long, any non-negative integer
    CLI_SWITCH, // no value: sets an int to 1
    CLI_LIST,   // CliList: up to CLI_MAX_LIST integers in [lo, hi], separated by ',' or ' '
} CliType;

enum { CLI_OPEN_LO = 1, CLI_OPEN_HI = 2 };

typedef struct {
    int count;
    int values[CLI_MAX_LIST];
} CliList;

typedef struct {
    const char *name;    // "-b", "--forward-only"
    CliType type;
    void *dest;          // int *, float *, double *, const char **, unsigned long long *, CliList *
    double lo, hi;       // allowed range of CLI_INT, CLI_FLOAT and CLI_LIST values
    const char *help;    // one or more lines; the default goes in the text
    const char *value_name; // CLI_CHOICE, CLI_ENUM: the '|'-separated words ("ln|rms|cbwc");
                            // CLI_STRING: what the value is ("dir", "glob")
    int open;            // CLI_OPEN_LO: the range excludes lo; CLI_OPEN_HI: excludes hi
    int given;           // set by cli_parse: times the flag appeared
} CliFlag;

typedef struct {
    const char *program;  // "train_gpt2"
    const char *synopsis; // after the name: "[options] MODEL.bin STATE.bin"
    const char *about;    // one or more lines printed after the synopsis, or NULL
    CliFlag *flags;
    int num_flags;
    int min_positional, max_positional;
    const char *footer;   // lines printed after the flags, or NULL
} CliSpec;

#define CLI_COUNT(array) ((int)(sizeof(array) / sizeof((array)[0])))

// Parses argv[1..argc-1] into the flags' destinations (which hold the
// defaults) and collects the positional arguments into positional[] (room
// for spec->max_positional). Returns their number. Exits as described above;
// first, a table that names a flag twice (cli_find_duplicate) is a bug in
// the program: error naming the flag, exit 1, even for -h.
int cli_parse(CliSpec *spec, int argc, char **argv, const char **positional);

// The first flag name the table holds twice: 1 with its two indices
// (*first < *second), or 0.
int cli_find_duplicate(const CliSpec *spec, int *first, int *second);

// The help text: usage line, about, one line per flag with its value type
// and range, footer.
void cli_print_help(const CliSpec *spec, FILE *out);

// Prints "error: <program>: <message> (see <program> -h)" to stderr and exits 1;
// for checks that involve several flags or a positional argument.
void cli_error(const CliSpec *spec, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((noreturn, format(printf, 2, 3)))
#endif
    ;

// Whether the flag was given on the command line (after cli_parse).
int cli_given(const CliSpec *spec, const char *name);

// A positional argument as an integer in [lo, hi], or cli_error naming it (what).
long cli_positional_int(const CliSpec *spec, const char *what, const char *text, long lo,
                        long hi);
// A positional argument as a number in [lo, hi] (open: CLI_OPEN_LO | CLI_OPEN_HI ends left out).
double cli_positional_double(const CliSpec *spec, const char *what, const char *text, double lo,
                             double hi, int open);

#endif
