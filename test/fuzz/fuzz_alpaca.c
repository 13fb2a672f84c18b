// The Alpaca JSON converter input (alpaca_to_sft): alpaca_parse and the
// prompt template, llmc/text/alpaca.c (cJSON).
#include "text/alpaca.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    AlpacaData alpaca;
    char err[READER_ERR_BYTES] = {0};
    int rc = alpaca_parse(&alpaca, (const char *)data, size, err, sizeof(err));
    fuzz_check_error(rc, err, sizeof(err));
    if (rc != 0) {
        return 0;
    }
    for (int i = 0; i < alpaca.count; i++) {
        char *prompt = alpaca_prompt(&alpaca.records[i]);
        if (prompt == NULL || strstr(prompt, "### Response:\n") == NULL) {
            abort();
        }
        free(prompt);
    }
    alpaca_free(&alpaca);
    return 0;
}
