// The GPT-2 tokenizer on the command line:
//   tokenizer [-vd DIR] encode FILE   the ids of FILE's bytes, space-separated, one line
//   tokenizer [-vd DIR] decode FILE   such a line of ids back into bytes (stdout)
//   tokenizer [-vd DIR] bin OUT       llm.c's gpt2_tokenizer.bin, so llm.c tools decode
// DIR holds encoder.json and vocab.bpe (default data/gpt2). FILE may be - for stdin.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "text/tokenizer.h"
#include "core/utils.h"

static unsigned char *read_input(const char *path, size_t *len) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen_check(path, "rb");
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc_check(cap, path);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            unsigned char *grown = realloc(buf, cap);
            if (grown == NULL) fatal("%s: out of memory reading %zu bytes", path, cap);
            buf = grown;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) fatal("%s: read error: %s", path, strerror(errno));
            break;
        }
    }
    if (f != stdin) fclose(f);
    *len = n;
    return buf;
}

static void parse_ids(const char *path, const unsigned char *text, size_t len, TokenList *ids,
                      int vocab_size) {
    char *copy = malloc_check(len + 1, path);
    memcpy(copy, text, len);
    copy[len] = '\0';
    for (char *p = copy;;) {
        while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
        if (*p == '\0') break;
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno != 0 ||
            (*end && *end != ' ' && *end != '\n' && *end != '\t' && *end != '\r')) {
            int word = (int)strcspn(p, " \t\r\n");
            fatal("%s: expected token ids separated by spaces, got \"%.*s\" at id %zu", path,
                  word < 20 ? word : 20, p, ids->len);
        }
        if (v < 0 || v >= vocab_size) {
            fatal("%s: token id %ld at position %zu is outside the vocabulary (size %d)", path, v,
                  ids->len, vocab_size);
        }
        token_list_push(ids, (int32_t)v);
        p = end;
    }
    free(copy);
}

int main(int argc, char **argv) {
    const char *dir = NULL;
    CliFlag flags[] = {
        {"-vd", CLI_STRING, &dir, 0, 0, "GPT-2's encoder.json and vocab.bpe (default data/gpt2)",
         "dir", 0, 0},
    };
    CliSpec spec = {.program = "tokenizer",
                    .synopsis = "[-vd DIR] encode FILE | decode FILE | bin OUT",
                    .about = "encode: FILE's bytes (- for stdin) as space-separated token ids\n"
                             "decode: such ids back into bytes; bin: llm.c's gpt2_tokenizer.bin\n",
                    .flags = flags, .num_flags = CLI_COUNT(flags),
                    .min_positional = 2, .max_positional = 2};
    const char *args[2];
    cli_parse(&spec, argc, argv, args);
    const char *command = args[0], *path = args[1];
    if (strcmp(command, "encode") != 0 && strcmp(command, "decode") != 0 &&
        strcmp(command, "bin") != 0) {
        cli_error(&spec, "unknown command '%s' (expected encode, decode or bin)", command);
    }
    Tokenizer tok;
    tokenizer_load(&tok, dir);
    if (strcmp(command, "bin") == 0) {
        tokenizer_write_bin(&tok, path);
        tokenizer_free(&tok);
        return EXIT_SUCCESS;
    }
    size_t len;
    unsigned char *text = read_input(path, &len);
    TokenList ids = {0};
    if (strcmp(command, "encode") == 0) {
        tokenizer_encode(&tok, text, len, &ids);
        for (size_t i = 0; i < ids.len; i++) {
            printf(i ? " %d" : "%d", ids.ids[i]);
        }
        printf("\n");
    } else {
        parse_ids(path, text, len, &ids, tok.vocab_size);
        tokenizer_decode_to(&tok, ids.ids, ids.len, stdout, "stdout");
    }
    if (fflush(stdout) != 0) fatal("stdout: write failed: %s", strerror(errno));
    token_list_free(&ids);
    free(text);
    tokenizer_free(&tok);
    return EXIT_SUCCESS;
}
