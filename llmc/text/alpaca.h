// Stanford Alpaca-format JSON, the input of bin/alpaca_to_sft: a list of
// {"instruction", "input" (optional), "output"} records, and the Alpaca
// prompt template (docs/formats.md, "SFT shard").
#ifndef FOLDNORM_ALPACA_H
#define FOLDNORM_ALPACA_H

#include <stddef.h>

typedef struct {
    const char *instruction;
    const char *input; // "" when missing or null
    const char *output;
} AlpacaRecord;

typedef struct {
    void *json; // the parsed cJSON tree the strings point into
    AlpacaRecord *records;
    int count;
} AlpacaData;

// Parses text[0..len): valid JSON, a non-empty list of objects with string
// "instruction" and "output" and, when present and not null, a string
// "input". 0, or -1 with the reason (byte offset and line for bad JSON,
// record index otherwise) in err and nothing allocated. Never exits.
int alpaca_parse(AlpacaData *out, const char *text, size_t len, char *err, size_t err_bytes);
void alpaca_free(AlpacaData *data);
// The record's prompt from Stanford Alpaca's template (with or without
// input); the caller frees it. NULL when out of memory.
char *alpaca_prompt(const AlpacaRecord *record);

#endif
