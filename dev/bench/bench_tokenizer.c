// Single-thread GPT-2 encode throughput of llmc/tokenizer on a text file:
// one cold pass (fresh word cache, as a one-shot encode would see) and the
// best of REPEATS warm passes. Prints "cold_s warm_s bytes tokens".
//   bench_tokenizer FILE [REPEATS=3]
#include <stdio.h>
#include <stdlib.h>

#include "tokenizer.h"
#include "utils.h"

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: bench_tokenizer FILE [REPEATS=3]\n");
        return EXIT_FAILURE;
    }
    int repeats = argc > 2 ? atoi(argv[2]) : 3;
    if (repeats < 1) fatal("REPEATS must be >= 1, got '%s'", argv[2]);
    FILE *f = fopen_check(argv[1], "rb");
    long size = file_size_bytes(f, argv[1]);
    unsigned char *text = malloc_check((size_t)size + 1, argv[1]);
    fread_check(text, 1, (size_t)size, f, argv[1], "the text");
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
