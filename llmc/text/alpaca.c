#include "alpaca.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/reader.h"

static const char PROMPT_WITH_INPUT[] =
    "Below is an instruction that describes a task, paired with an input that provides further "
    "context. Write a response that appropriately completes the request.\n\n"
    "### Instruction:\n%s\n\n### Input:\n%s\n\n### Response:\n";
static const char PROMPT_NO_INPUT[] =
    "Below is an instruction that describes a task. Write a response that appropriately "
    "completes the request.\n\n### Instruction:\n%s\n\n### Response:\n";

// The string field `name` of a record: "" when absent or null and optional.
static int string_field(const cJSON *record, const char *name, int required, int index,
                        const char **value, char *err, size_t err_bytes) {
    const cJSON *field = cJSON_GetObjectItemCaseSensitive(record, name);
    *value = "";
    if (field == NULL || cJSON_IsNull(field)) {
        return required ? input_error(err, err_bytes, "record %d has no \"%s\" (a string)", index,
                                      name)
                        : 0;
    }
    if (!cJSON_IsString(field) || field->valuestring == NULL) {
        return input_error(err, err_bytes, "record %d: \"%s\" is not a string", index, name);
    }
    *value = field->valuestring;
    return 0;
}

static int alpaca_parse_body(AlpacaData *out, const char *text, size_t len, char *err,
                             size_t err_bytes) {
    const char *error_at = NULL;
    cJSON *json = cJSON_ParseWithLengthOpts(text, len, &error_at, 0);
    out->json = json;
    if (json == NULL) {
        size_t offset = error_at != NULL && error_at >= text ? (size_t)(error_at - text) : 0;
        int line = 1;
        for (size_t i = 0; i < offset && i < len; i++) line += text[i] == '\n';
        return input_error(err, err_bytes, "malformed JSON near byte %zu (line %d)", offset, line);
    }
    size_t end = error_at != NULL ? (size_t)(error_at - text) : len; // the first value's end
    while (end < len && (text[end] == ' ' || text[end] == '\t' || text[end] == '\n' ||
                         text[end] == '\r')) {
        end++;
    }
    if (end < len) {
        return input_error(err, err_bytes, "trailing data after the JSON value at byte %zu", end);
    }
    if (!cJSON_IsArray(json)) {
        return input_error(err, err_bytes, "expected a JSON list of Alpaca records");
    }
    int count = cJSON_GetArraySize(json);
    if (count == 0) {
        return input_error(err, err_bytes, "no records");
    }
    out->records = calloc((size_t)count, sizeof(AlpacaRecord));
    if (out->records == NULL) {
        return input_error(err, err_bytes, "out of memory for %d records", count);
    }
    int index = 0;
    for (const cJSON *r = json->child; r != NULL; r = r->next, index++) {
        AlpacaRecord *rec = &out->records[index];
        if (!cJSON_IsObject(r)) {
            return input_error(err, err_bytes, "record %d is not an object", index);
        }
        if (string_field(r, "instruction", 1, index, &rec->instruction, err, err_bytes) != 0 ||
            string_field(r, "input", 0, index, &rec->input, err, err_bytes) != 0 ||
            string_field(r, "output", 1, index, &rec->output, err, err_bytes) != 0) {
            return -1;
        }
    }
    out->count = count;
    return 0;
}

int alpaca_parse(AlpacaData *out, const char *text, size_t len, char *err, size_t err_bytes) {
    memset(out, 0, sizeof(*out));
    if (alpaca_parse_body(out, text, len, err, err_bytes) != 0) {
        alpaca_free(out);
        return -1;
    }
    return 0;
}

void alpaca_free(AlpacaData *data) {
    cJSON_Delete(data->json);
    free(data->records);
    memset(data, 0, sizeof(*data));
}

char *alpaca_prompt(const AlpacaRecord *r) {
    int with_input = r->input[0] != '\0';
    const char *tmpl = with_input ? PROMPT_WITH_INPUT : PROMPT_NO_INPUT;
    size_t cap = strlen(tmpl) + strlen(r->instruction) + strlen(r->input) + 1;
    char *prompt = malloc(cap);
    if (prompt == NULL) {
        return NULL;
    }
    if (with_input) {
        snprintf(prompt, cap, PROMPT_WITH_INPUT, r->instruction, r->input);
    } else {
        snprintf(prompt, cap, PROMPT_NO_INPUT, r->instruction);
    }
    return prompt;
}
