// llm.c's multiple-choice eval files and score (mc_eval.h).
#include "mc_eval.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_write.h"
#include "core/utils.h"

#define MC_EXAMPLE_MARKER 65535

// one example from stream[*at...n): checks, fills e, advances *at
static int parse_example(const uint16_t *s, size_t n, size_t *at, int index, int vocab_size,
                         McExample *e, size_t *bytes, char *err, size_t err_bytes) {
    const size_t start = *at;
    if (n - start < 6) {
        return input_error(err, err_bytes, "example %d: truncated header", index);
    }
    if (s[start] != MC_EXAMPLE_MARKER || s[start + 2] != index) {
        return input_error(err, err_bytes, "example %d: marker %u, index %u (expected %u, %d)",
                           index, s[start], s[start + 2], MC_EXAMPLE_MARKER, index);
    }
    *bytes = s[start + 1];
    e->label = s[start + 3];
    e->num_completions = s[start + 4];
    if (*bytes % 2 != 0 || *bytes / 2 > n - start || *bytes / 2 < 7) {
        return input_error(err, err_bytes, "example %d: %zu bytes, with %zu bytes left", index,
                           *bytes, 2 * (n - start));
    }
    if (e->num_completions < 1 || e->num_completions > MC_MAX_COMPLETIONS ||
        e->label >= e->num_completions) {
        return input_error(err, err_bytes, "example %d: label %d of %d completions (1..%d)",
                           index, e->label, e->num_completions, MC_MAX_COMPLETIONS);
    }
    const size_t end = start + *bytes / 2;
    size_t p = start + 5;
    for (int part = -1; part < e->num_completions; part++) { // -1: the context
        if (p >= end) {
            return input_error(err, err_bytes, "example %d: ends inside its tokens", index);
        }
        const int len = s[p++];
        if ((size_t)len > end - p || len == 0) { // llm.c: a context and completions of >= 1 token
            return input_error(err, err_bytes, "example %d: part %d of %d tokens does not fit",
                               index, part + 1, len);
        }
        for (int i = 0; i < len; i++) {
            if (s[p + i] >= vocab_size) {
                return input_error(err, err_bytes, "example %d: token %u outside the vocabulary "
                                   "(size %d)", index, s[p + i], vocab_size);
            }
        }
        if (part < 0) {
            e->context_len = len;
            e->context = s + p;
        } else {
            e->completion_len[part] = len;
            e->completion[part] = s + p;
        }
        p += (size_t)len;
    }
    if (p != end) {
        return input_error(err, err_bytes, "example %d: %zu bytes of tokens, %zu in its count",
                           index, 2 * (p - start), *bytes);
    }
    *at = end;
    return 0;
}

static int read_body(McEvalSet *set, Reader *r, int vocab_size, char *err, size_t err_bytes) {
    int32_t h[256];
    if (reader_read(r, h, sizeof(h), "the eval file header", err, err_bytes) != 0) {
        return -1;
    }
    if (h[0] != MC_EVAL_MAGIC || h[1] != 1) {
        return input_error(err, err_bytes, "not a multiple-choice eval file (magic %d version %d,"
                           " expected %d version 1)", h[0], h[1], MC_EVAL_MAGIC);
    }
    const size_t left = reader_left(r);
    if (h[2] < 1 || left % 2 != 0 || (size_t)h[2] > left / 14) { // 7 uint16s at least each
        return input_error(err, err_bytes, "%d examples in %zu bytes", h[2], left);
    }
    const size_t n = left / 2;
    set->stream = malloc(left);
    set->examples = calloc((size_t)h[2], sizeof(McExample));
    if (set->stream == NULL || set->examples == NULL) {
        return input_error(err, err_bytes, "out of memory for %d examples", h[2]);
    }
    if (reader_read(r, set->stream, left, "the examples", err, err_bytes) != 0) {
        return -1;
    }
    size_t at = 0, longest_bytes = 0;
    for (int i = 0; i < h[2]; i++) {
        McExample *e = &set->examples[i];
        size_t bytes = 0;
        if (parse_example(set->stream, n, &at, i, vocab_size, e, &bytes, err, err_bytes) != 0) {
            return -1;
        }
        longest_bytes = bytes > longest_bytes ? bytes : longest_bytes;
        for (int c = 0; c < e->num_completions; c++) {
            const int row = e->context_len + e->completion_len[c] - 1;
            set->longest_row = row > set->longest_row ? row : set->longest_row;
        }
        set->count = i + 1;
    }
    if (at != n || (size_t)h[3] != longest_bytes) {
        return input_error(err, err_bytes, "%zu bytes after %d examples; longest example %zu "
                           "bytes, header says %d", 2 * (n - at), h[2], longest_bytes, h[3]);
    }
    return 0;
}

int mc_eval_read(McEvalSet *set, Reader *r, int vocab_size, char *err, size_t err_bytes) {
    memset(set, 0, sizeof(*set));
    if (read_body(set, r, vocab_size, err, err_bytes) != 0) {
        mc_eval_free(set);
        return -1;
    }
    return 0;
}

void mc_eval_load(McEvalSet *set, const char *path, int vocab_size) {
    char why[READER_ERR_BYTES];
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fatal("%s: cannot open: %s", path, strerror(errno));
    }
    Reader r;
    int rc = reader_init_file(&r, f, why, sizeof(why));
    if (rc == 0) {
        rc = mc_eval_read(set, &r, vocab_size, why, sizeof(why));
    }
    fclose(f);
    if (rc != 0) {
        fatal("%s: %s", path, why);
    }
}

typedef struct {
    const McExample *examples;
    int count;
} McWriteContext;

// an example's uint16 values into out (room for 65535 bytes); returns how many
static size_t example_stream(const McExample *e, int index, uint16_t *out, const char *path) {
    size_t n = 0;
    out[n++] = MC_EXAMPLE_MARKER;
    out[n++] = 0; // its bytes, below
    out[n++] = (uint16_t)index;
    out[n++] = (uint16_t)e->label;
    out[n++] = (uint16_t)e->num_completions;
    for (int part = -1; part < e->num_completions; part++) {
        const int len = part < 0 ? e->context_len : e->completion_len[part];
        const uint16_t *tokens = part < 0 ? e->context : e->completion[part];
        if (len < 1 || n + 1 + (size_t)len > 32767) {
            fatal("%s: example %d: part %d of %d tokens (>= 1, 65535 bytes in all)", path, index,
                  part + 1, len);
        }
        out[n++] = (uint16_t)len;
        for (int i = 0; i < len; i++) {
            if (tokens[i] == MC_EXAMPLE_MARKER) fatal("%s: example %d: token 65535", path, index);
            out[n++] = tokens[i];
        }
    }
    out[1] = (uint16_t)(2 * n);
    return n;
}

static void write_examples(FILE *f, const char *path, const void *ctx_ptr) {
    const McWriteContext *ctx = ctx_ptr;
    uint16_t *stream = malloc_check(32768 * sizeof(uint16_t), "an eval example");
    int32_t h[256] = {MC_EVAL_MAGIC, 1, ctx->count, 0};
    for (int i = 0; i < ctx->count; i++) { // the longest example first: the header holds it
        const int32_t bytes = (int32_t)(2 * example_stream(&ctx->examples[i], i, stream, path));
        h[3] = bytes > h[3] ? bytes : h[3];
    }
    fwrite_check(h, sizeof(int32_t), 256, f, path);
    for (int i = 0; i < ctx->count; i++) {
        const size_t n = example_stream(&ctx->examples[i], i, stream, path);
        fwrite_check(stream, sizeof(uint16_t), n, f, path);
    }
    free(stream);
}

void mc_eval_write(const char *path, const McExample *examples, int count) {
    for (int i = 0; i < count; i++) {
        const McExample *e = &examples[i];
        if (e->num_completions < 1 || e->num_completions > MC_MAX_COMPLETIONS ||
            e->label < 0 || e->label >= e->num_completions) {
            fatal("%s: example %d: label %d of %d completions", path, i, e->label,
                  e->num_completions);
        }
    }
    if (count < 1 || count > 65535) fatal("%s: %d examples (1..65535)", path, count);
    const McWriteContext ctx = {examples, count};
    write_file_atomic(path, write_examples, &ctx);
}

void mc_eval_free(McEvalSet *set) {
    free(set->examples);
    free(set->stream);
    memset(set, 0, sizeof(*set));
}

void mc_eval_rows(const McExample *e, int T, int *inputs, int *targets) {
    for (int c = 0; c < e->num_completions; c++) {
        int *in = inputs + (size_t)c * T, *out = targets + (size_t)c * T;
        const int n = e->context_len + e->completion_len[c]; // tokens of context + completion
        for (int t = 0; t < T; t++) {
            const int k = t < e->context_len ? e->context[t]
                          : t < n ? e->completion[c][t - e->context_len] : 0;
            in[t] = k;
            out[t] = -1; // no loss but on the completion's tokens
        }
        // position t predicts token t + 1: the completion's tokens are context_len..n-1
        for (int t = e->context_len - 1; t < n - 1; t++) {
            out[t] = t + 1 < e->context_len ? -1 : e->completion[c][t + 1 - e->context_len];
        }
    }
}

int mc_eval_pick(const McExample *e, const int *targets, const float *losses, int T) {
    int best = -1;
    double best_loss = 0.0;
    for (int c = 0; c < e->num_completions; c++) {
        double sum = 0.0;
        int counted = 0;
        for (int t = 0; t < T; t++) {
            if (targets[(size_t)c * T + t] >= 0) {
                sum += losses[(size_t)c * T + t];
                counted++;
            }
        }
        const double mean = counted > 0 ? sum / counted : 0.0;
        if (best < 0 || mean < best_loss) { // ties: the first, as llm.c's strict <
            best = c;
            best_loss = mean;
        }
    }
    return best;
}

int mc_eval_score(GPT2 *model, const McEvalSet *set, int first, int stride, int T, int *scored) {
    int correct = 0;
    if (set->longest_row > T) {
        fatal("multiple-choice eval: a row of %d tokens does not fit -t %d", set->longest_row, T);
    }
    int *inputs = malloc_check((size_t)MC_MAX_COMPLETIONS * T * sizeof(int), "eval rows");
    int *targets = malloc_check((size_t)MC_MAX_COMPLETIONS * T * sizeof(int), "eval targets");
    for (int i = first; i < set->count; i += stride) {
        const McExample *e = &set->examples[i];
        mc_eval_rows(e, T, inputs, targets);
        gpt2_forward(model, inputs, targets, e->num_completions, T);
        correct += mc_eval_pick(e, targets, model->acts.losses, T) == e->label;
        (*scored)++;
    }
    free(inputs);
    free(targets);
    return correct;
}

int mc_eval_load_for_trainer(McEvalSet *set, const char *path, int vocab_size, int T) {
    if (path == NULL) return 0;
    mc_eval_load(set, path, vocab_size);
    if (set->longest_row > T) {
        fatal("-mc %s: a row takes %d tokens (context + completion - 1), more than -t %d", path,
              set->longest_row, T);
    }
    return 1;
}
