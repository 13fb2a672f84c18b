// GPT-2's tokenizer files: tokenizer_parse_files, llmc/text/tokenizer.c (cJSON
// for encoder.json). Input: encoder.json, a NUL byte, vocab.bpe.
#include "fuzz.h"
#include "text/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, '\0', size);
    size_t encoder_bytes = nul != NULL ? (size_t)(nul - data) : size;
    const char *merges = nul != NULL ? (const char *)nul + 1 : "";
    size_t merges_bytes = nul != NULL ? size - encoder_bytes - 1 : 0;
    Tokenizer tok;
    char err[READER_ERR_BYTES] = {0};
    int rc = tokenizer_parse_files(&tok, (const char *)data, encoder_bytes, "encoder.json", merges,
                                   merges_bytes, "vocab.bpe", err, sizeof(err));
    fuzz_check_error(rc, err, sizeof(err));
    tokenizer_free(&tok);
    return 0;
}
