#include "hf_gpt2.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_write.h"
#include "core/reader.h"
#include "core/utils.h"

#define HF_NAME_BYTES 96

// ---------------------------------------------------------------------------
// config.json

static int config_int(const cJSON *root, const char *key, const char *alt, int *out, char *err,
                      size_t err_bytes) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (v == NULL && alt != NULL) v = cJSON_GetObjectItemCaseSensitive(root, alt);
    if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > (1 << 24) ||
        v->valuedouble != floor(v->valuedouble)) {
        return input_error(err, err_bytes, "config.json: \"%s\" must be an integer in 1..%d", key, 1 << 24);
    }
    *out = (int)v->valuedouble;
    return 0;
}

int hf_gpt2_config_parse(const char *text, size_t len, HfGpt2Config *cfg, char *err, size_t err_bytes) {
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (root == NULL || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return input_error(err, err_bytes, "config.json: not a JSON object");
    }
    int rc = 0;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "activation_function");
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(root, "layer_norm_epsilon");
    const cJSON *tied = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
    const cJSON *inner = cJSON_GetObjectItemCaseSensitive(root, "n_inner");
    if (cJSON_IsString(type) && strcmp(type->valuestring, "gpt2") != 0) {
        rc = input_error(err, err_bytes, "config.json: model_type \"%.32s\" is not gpt2", type->valuestring);
    } else if (act != NULL && (!cJSON_IsString(act) || (strcmp(act->valuestring, "gelu_new") != 0 &&
                                                        strcmp(act->valuestring, "gelu_pytorch_tanh") != 0))) {
        rc = input_error(err, err_bytes, "config.json: activation_function must be gelu_new (GELU, tanh form)");
    } else if (eps != NULL && (!cJSON_IsNumber(eps) || fabs(eps->valuedouble - 1e-5) > 1e-12)) {
        rc = input_error(err, err_bytes, "config.json: layer_norm_epsilon must be 1e-5 (foldnorm's norms)");
    } else if (cJSON_IsFalse(tied)) {
        rc = input_error(err, err_bytes, "config.json: tie_word_embeddings is false; foldnorm's GPT-2 ties the LM head to wte");
    } else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "scale_attn_by_inverse_layer_idx")) ||
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "reorder_and_upcast_attn"))) {
        rc = input_error(err, err_bytes, "config.json: scale_attn_by_inverse_layer_idx / reorder_and_upcast_attn are not supported");
    } else {
        rc = config_int(root, "n_layer", NULL, &cfg->n_layer, err, err_bytes);
        if (rc == 0) rc = config_int(root, "n_head", NULL, &cfg->n_head, err, err_bytes);
        if (rc == 0) rc = config_int(root, "n_embd", NULL, &cfg->n_embd, err, err_bytes);
        if (rc == 0) rc = config_int(root, "n_positions", "n_ctx", &cfg->n_positions, err, err_bytes);
        if (rc == 0) rc = config_int(root, "vocab_size", NULL, &cfg->vocab_size, err, err_bytes);
        if (rc == 0 && inner != NULL && !cJSON_IsNull(inner) &&
            !(cJSON_IsNumber(inner) && inner->valuedouble == 4.0 * cfg->n_embd)) {
            rc = input_error(err, err_bytes, "config.json: n_inner must be null or 4 * n_embd");
        }
    }
    cJSON_Delete(root);
    return rc;
}

// ---------------------------------------------------------------------------
// import

// Where our tensors sit in HF's: HF name (with %d for the layer), whether it
// is a Conv1D weight (stored [in, out]), and the HF shape as (rows, cols).
typedef struct {
    const char *name;
    int per_layer;
    int conv1d; // transpose: ours (out, in) row-major = HF (in, out) row-major transposed
} HfTensorSpec;

static const HfTensorSpec SPECS[GPT2_NUM_PARAM_TENSORS] = {
    {"wte.weight", 0, 0},           {"wpe.weight", 0, 0},          {"h.%d.ln_1.weight", 1, 0},
    {"h.%d.ln_1.bias", 1, 0},       {"h.%d.attn.c_attn.weight", 1, 1}, {"h.%d.attn.c_attn.bias", 1, 0},
    {"h.%d.attn.c_proj.weight", 1, 1}, {"h.%d.attn.c_proj.bias", 1, 0}, {"h.%d.ln_2.weight", 1, 0},
    {"h.%d.ln_2.bias", 1, 0},       {"h.%d.mlp.c_fc.weight", 1, 1}, {"h.%d.mlp.c_fc.bias", 1, 0},
    {"h.%d.mlp.c_proj.weight", 1, 1}, {"h.%d.mlp.c_proj.bias", 1, 0}, {"ln_f.weight", 0, 0},
    {"ln_f.bias", 0, 0},
};

// Our per-layer shape of tensor i as (rows, cols) of the HF tensor; cols 0 = a vector.
static void hf_shape(int i, const GPT2Config *c, int64_t *rows, int64_t *cols) {
    int64_t C = c->channels;
    int64_t shapes[GPT2_NUM_PARAM_TENSORS][2] = {
        {c->vocab_size, C}, {c->max_seq_len, C}, {C, 0}, {C, 0}, {C, 3 * C}, {3 * C, 0}, {C, C}, {C, 0},
        {C, 0},             {C, 0},              {C, 4 * C}, {4 * C, 0}, {4 * C, C}, {C, 0}, {C, 0}, {C, 0}};
    *rows = shapes[i][0];
    *cols = shapes[i][1];
}

// Finds NAME or transformer.NAME in any file; -1 if absent or present twice.
static const SafetensorsTensor *find_tensor(const Safetensors *files, int n, const char *name, int *count) {
    const SafetensorsTensor *found = NULL;
    char prefixed[HF_NAME_BYTES + 16];
    snprintf(prefixed, sizeof(prefixed), "transformer.%s", name);
    *count = 0;
    for (int f = 0; f < n; f++) {
        const SafetensorsTensor *a = safetensors_find(&files[f], name), *b = safetensors_find(&files[f], prefixed);
        if (a != NULL) found = a, (*count)++;
        if (b != NULL) found = b, (*count)++;
    }
    return found;
}

// Is this tensor one we read (or know to skip)?
static int known_name(const char *name, int L) {
    if (strncmp(name, "transformer.", 12) == 0) name += 12;
    if (strcmp(name, "lm_head.weight") == 0) return 1;
    for (int i = 0; i < GPT2_NUM_PARAM_TENSORS; i++) {
        if (!SPECS[i].per_layer && strcmp(name, SPECS[i].name) == 0) return 1;
    }
    int layer, used = 0;
    if (sscanf(name, "h.%d.%n", &layer, &used) == 1 && used > 0 && layer >= 0 && layer < L) {
        char expect[HF_NAME_BYTES];
        for (int i = 0; i < GPT2_NUM_PARAM_TENSORS; i++) {
            if (!SPECS[i].per_layer) continue;
            snprintf(expect, sizeof(expect), SPECS[i].name, layer);
            if (strcmp(name, expect) == 0) return 1;
        }
        snprintf(expect, sizeof(expect), "h.%d.attn.bias", layer); // causal-mask buffers
        if (strcmp(name, expect) == 0) return 1;
        snprintf(expect, sizeof(expect), "h.%d.attn.masked_bias", layer);
        if (strcmp(name, expect) == 0) return 1;
    }
    return 0;
}

static int copy_tensor(float *dst, const SafetensorsTensor *t, int64_t rows, int64_t cols, int conv1d,
                       float *scratch, char *err, size_t err_bytes) {
    int ndim = cols == 0 ? 1 : 2;
    if (t->ndim != ndim || t->shape[0] != rows || (ndim == 2 && t->shape[1] != cols)) {
        char got[64] = "";
        for (int d = 0, at = 0; d < t->ndim && at < 50; d++) {
            at += snprintf(got + at, sizeof(got) - (size_t)at, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
        }
        return input_error(err, err_bytes, "tensor '%s' has shape [%s], expected [%lld%s%lld]", t->name, got,
                           (long long)rows, ndim == 2 ? ", " : "", ndim == 2 ? (long long)cols : 0LL);
    }
    float *src = conv1d ? scratch : dst;
    if (safetensors_to_f32(t, src) != 0) {
        return input_error(err, err_bytes, "tensor '%s' has dtype %s; expected F32, F16, BF16 or F64", t->name,
                           t->dtype_name);
    }
    for (size_t i = 0; i < t->numel; i++) {
        if (!isfinite(src[i])) return input_error(err, err_bytes, "tensor '%s' holds a NaN or Inf at %zu", t->name, i);
    }
    if (conv1d) { // HF (in = rows, out = cols) -> ours (out, in)
        for (int64_t r = 0; r < rows; r++) {
            for (int64_t c = 0; c < cols; c++) dst[c * rows + r] = src[r * cols + c];
        }
    }
    return 0;
}

int hf_gpt2_import(GPT2 *model, const HfGpt2Config *hf, const Safetensors *files, int num_files,
                   char *err, size_t err_bytes) {
    GPT2Config c = {.max_seq_len = hf->n_positions, .vocab_size = hf->vocab_size,
                    .padded_vocab_size = (hf->vocab_size + 127) / 128 * 128, .num_layers = hf->n_layer,
                    .num_heads = hf->n_head, .channels = hf->n_embd};
    const char *why = gpt2_config_error(&c);
    if (why != NULL) return input_error(err, err_bytes, "config.json: %s", why);
    for (int f = 0; f < num_files; f++) {
        for (int i = 0; i < files[f].count; i++) {
            if (!known_name(files[f].tensors[i].name, c.num_layers)) {
                return input_error(err, err_bytes, "unexpected tensor '%s' (not part of a %d-layer GPT-2)",
                                   files[f].tensors[i].name, c.num_layers);
            }
        }
    }
    gpt2_init_random(model, &c, MODE_LN, 0); // allocation; every real value is overwritten
    size_t largest = (size_t)c.channels * 4 * (size_t)c.channels;
    float *scratch = malloc(largest * sizeof(float));
    if (scratch == NULL) {
        gpt2_free(model);
        return input_error(err, err_bytes, "out of memory");
    }
    float *tensors[GPT2_NUM_PARAM_TENSORS];
    memcpy(tensors, &model->params, sizeof(tensors)); // ParameterTensors is 16 pointers in this order
    int rc = 0;
    for (int i = 0; i < GPT2_NUM_PARAM_TENSORS && rc == 0; i++) {
        int64_t rows, cols;
        hf_shape(i, &c, &rows, &cols);
        size_t per_layer = (size_t)rows * (size_t)(cols ? cols : 1);
        for (int l = 0; l < (SPECS[i].per_layer ? c.num_layers : 1) && rc == 0; l++) {
            char name[HF_NAME_BYTES];
            snprintf(name, sizeof(name), SPECS[i].name, l);
            int count;
            const SafetensorsTensor *t = find_tensor(files, num_files, name, &count);
            if (count != 1) {
                rc = input_error(err, err_bytes, "tensor '%s' %s", name, count ? "appears more than once" : "is missing");
                break;
            }
            rc = copy_tensor(tensors[i] + (size_t)l * per_layer, t, rows, cols, SPECS[i].conv1d, scratch, err,
                             err_bytes);
        }
    }
    int count;
    const SafetensorsTensor *head = find_tensor(files, num_files, "lm_head.weight", &count);
    if (rc == 0 && head != NULL) { // must be the tied wte itself
        size_t n = (size_t)c.vocab_size * (size_t)c.channels;
        float *h = malloc(n * sizeof(float));
        if (h == NULL) {
            rc = input_error(err, err_bytes, "out of memory");
        } else {
            rc = copy_tensor(h, head, c.vocab_size, c.channels, 0, NULL, err, err_bytes);
            if (rc == 0 && memcmp(h, model->params.wte, n * sizeof(float)) != 0) {
                rc = input_error(err, err_bytes, "lm_head.weight differs from wte.weight: an untied head, which "
                                                 "foldnorm's GPT-2 does not have");
            }
            free(h);
        }
    }
    free(scratch);
    if (rc != 0) gpt2_free(model);
    return rc;
}

// ---------------------------------------------------------------------------
// export

typedef struct {
    char *text;
} TextFile;

static void write_text(FILE *f, const char *path, const void *ctx) {
    const char *text = ((const TextFile *)ctx)->text;
    fwrite_check(text, 1, strlen(text), f, path);
}

static void write_config(const GPT2Config *c, const char *path) {
    cJSON *root = cJSON_CreateObject(), *arch = cJSON_CreateArray();
    if (root == NULL || arch == NULL) fatal("%s: out of memory", path);
    cJSON_AddItemToArray(arch, cJSON_CreateString("GPT2LMHeadModel"));
    cJSON_AddItemToObject(root, "architectures", arch);
    cJSON_AddStringToObject(root, "model_type", "gpt2");
    cJSON_AddNumberToObject(root, "vocab_size", c->vocab_size);
    cJSON_AddNumberToObject(root, "n_positions", c->max_seq_len);
    cJSON_AddNumberToObject(root, "n_ctx", c->max_seq_len);
    cJSON_AddNumberToObject(root, "n_embd", c->channels);
    cJSON_AddNumberToObject(root, "n_layer", c->num_layers);
    cJSON_AddNumberToObject(root, "n_head", c->num_heads);
    cJSON_AddNullToObject(root, "n_inner");
    cJSON_AddStringToObject(root, "activation_function", "gelu_new");
    cJSON_AddNumberToObject(root, "layer_norm_epsilon", 1e-5);
    cJSON_AddNumberToObject(root, "initializer_range", 0.02);
    cJSON_AddTrueToObject(root, "tie_word_embeddings");
    if (c->vocab_size > 50256) { // GPT-2's <|endoftext|>
        cJSON_AddNumberToObject(root, "bos_token_id", 50256);
        cJSON_AddNumberToObject(root, "eos_token_id", 50256);
    }
    cJSON_AddStringToObject(root, "torch_dtype", "float32");
    TextFile file = {cJSON_Print(root)};
    cJSON_Delete(root);
    if (file.text == NULL) fatal("%s: out of memory", path);
    write_file_atomic(path, write_text, &file);
    free(file.text);
}

void hf_gpt2_export(const GPT2 *model, const char *dir) {
    const char *refusal = norm_policy(model->mode)->fold_refusal;
    if (refusal != NULL) {
        fatal("%s models have no LayerNorm GPT-2 equivalent (%s); export an ln or cbwc model "
              "(a folded model's source)", norm_mode_name(model->mode), refusal);
    }
    const GPT2Config *c = &model->config;
    int L = c->num_layers, n = 4 + 12 * L;
    SafetensorsOut *out = calloc((size_t)n, sizeof(SafetensorsOut));
    char (*names)[HF_NAME_BYTES + 16] = calloc((size_t)n, sizeof(*names));
    float *transposed = malloc(4 * (size_t)L * (size_t)c->channels * (size_t)c->channels * 3 * sizeof(float));
    if (out == NULL || names == NULL || transposed == NULL) fatal("out of memory exporting the model");
    const float *tensors[GPT2_NUM_PARAM_TENSORS];
    memcpy(tensors, &model->params, sizeof(tensors));
    int k = 0;
    float *t_at = transposed;
    for (int i = 0; i < GPT2_NUM_PARAM_TENSORS; i++) {
        int64_t rows, cols;
        hf_shape(i, c, &rows, &cols);
        size_t per_layer = (size_t)rows * (size_t)(cols ? cols : 1);
        for (int l = 0; l < (SPECS[i].per_layer ? L : 1); l++, k++) {
            char base[HF_NAME_BYTES];
            snprintf(base, sizeof(base), SPECS[i].name, l);
            snprintf(names[k], sizeof(names[k]), "transformer.%s", base);
            const float *src = tensors[i] + (size_t)l * per_layer; // wte: the first V of Vp rows
            if (SPECS[i].conv1d) { // ours (out = cols, in = rows) -> HF (in, out)
                for (int64_t r = 0; r < rows; r++) {
                    for (int64_t q = 0; q < cols; q++) t_at[r * cols + q] = src[q * rows + r];
                }
                src = t_at;
                t_at += per_layer;
            }
            out[k] = (SafetensorsOut){.name = names[k], .ndim = cols ? 2 : 1, .shape = {rows, cols}, .data = src};
        }
    }
    char path[4096];
    int w = snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    if (w < 0 || (size_t)w >= sizeof(path) - 16) fatal("%s: output folder name too long", dir);
    safetensors_write(path, out, k);
    snprintf(path, sizeof(path), "%s/config.json", dir);
    write_config(c, path);
    free(transposed);
    free(names);
    free(out);
}
