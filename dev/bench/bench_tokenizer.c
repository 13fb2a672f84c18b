// Single-thread GPT-2 encode throughput of llmc/text/tokenizer on a text file:
// one cold pass (fresh word cache, as a one-shot encode would see) and the
// best of REPEATS warm passes. Prints "cold_s warm_s bytes tokens".
//   bench_tokenizer FILE [REPEATS=3]
#include <stdio.h>
#include <stdlib.h>

#include "core/cli.h"
#include "text/tokenizer.h"
#include "core/utils.h"

int main(int argc, char **argv) {
    CliSpec spec = {.program = "bench_tokenizer", .synopsis = "FILE [REPEATS=3]",
                    .about = "Prints \"cold_s warm_s bytes tokens\" of GPT-2 encoding FILE.\n",
                    .min_positional = 1, .max_positional = 2};
    const char *args[2];
    int n = cli_parse(&spec, argc, argv, args);
    const char *path = args[0];
    int repeats = n > 1 ? (int)cli_positional_int(&spec, "REPEATS", args[1], 1, 100000) : 3;
    FILE *f = fopen_check(path, "rb");
    long size = file_size_bytes(f, path);
    unsigned char *text = malloc_check((size_t)size + 1, path);
    fread_check(text, 1, (size_t)size, f, path, "the text");
    fclose(f);
    Tokenizer tok;
    tokenizer_load(&tok, NULL);
    TokenList ids = {0};
    double t0 = now_seconds();
    tokenizer_encode(&tok, text, (size_t)size, &ids);
    double cold = now_seconds() - t0;
    size_t count = ids.len;
    double warm = 1e30;
    for (int r = 0; r < repeats; r++) {
        ids.len = 0;
        t0 = now_seconds();
        tokenizer_encode(&tok, text, (size_t)size, &ids);
        double s = now_seconds() - t0;
        warm = s < warm ? s : warm;
    }
    printf("%.6f %.6f %ld %zu\n", cold, warm, size, count);
    token_list_free(&ids);
    free(text);
    tokenizer_free(&tok);
    return EXIT_SUCCESS;
}
