// GPT-2 checkpoints between Hugging Face's layout (safetensors + config.json)
// and llm.c's model file (docs/formats.md):
//   hf_gpt2 import SRC OUT.bin      SRC: a model.safetensors file (config.json
//                                   beside it), or a folder with model.safetensors
//                                   or model.safetensors.index.json and its shards
//   hf_gpt2 export MODEL.bin DIR    DIR/model.safetensors + DIR/config.json; a cbwc
//                                   model exports as the LayerNorm GPT-2 of its proxy
//                                   weights (the same function: identical logits)
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/cli.h"
#include "gpt2/gpt2.h"
#include "interop/hf_gpt2.h"
#include "core/reader.h"
#include "interop/safetensors.h"
#include "core/utils.h"

#define MAX_FILE_BYTES ((size_t)64 << 30)
#define MAX_SHARDS 256

typedef struct {
    unsigned char *bytes[MAX_SHARDS];
    Safetensors files[MAX_SHARDS];
    int count;
} Shards;

static unsigned char *read_whole(const char *path, size_t *len) {
    unsigned char *bytes;
    char err[READER_ERR_BYTES];
    if (read_file_bytes(path, MAX_FILE_BYTES, &bytes, len, err, sizeof(err)) != 0) fatal("%s: %s", path, err);
    return bytes;
}

static void load_shard(Shards *s, const char *path) {
    if (s->count == MAX_SHARDS) fatal("%s: more than %d shards", path, MAX_SHARDS);
    size_t len;
    char err[READER_ERR_BYTES];
    s->bytes[s->count] = read_whole(path, &len);
    if (safetensors_parse(&s->files[s->count], s->bytes[s->count], len, err, sizeof(err)) != 0) {
        fatal("%s: %s", path, err);
    }
    s->count++;
}

static int is_directory(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

// The shards an index names ({"weight_map": {tensor: file}}), each once; every
// file a plain name in dir, and every tensor found in the file named for it.
static void load_index(Shards *s, const char *dir, const char *index_path) {
    size_t len;
    unsigned char *text = read_whole(index_path, &len);
    const char *end;
    cJSON *root = cJSON_ParseWithLengthOpts((const char *)text, len, &end, 0);
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(map) || map->child == NULL) fatal("%s: no \"weight_map\" object", index_path);
    char names[MAX_SHARDS][256];
    int n = 0;
    for (const cJSON *e = map->child; e != NULL; e = e->next) {
        const char *file = cJSON_IsString(e) ? e->valuestring : NULL;
        if (file == NULL || file[0] == '\0' || strchr(file, '/') != NULL || strcmp(file, "..") == 0 ||
            strlen(file) >= sizeof(names[0])) {
            fatal("%s: tensor '%s' maps to '%s', not a file name in the same folder", index_path, e->string,
                  file ? file : "(not a string)");
        }
        int known = 0;
        for (int i = 0; i < n; i++) known |= strcmp(names[i], file) == 0;
        if (!known) {
            if (n == MAX_SHARDS) fatal("%s: more than %d shards", index_path, MAX_SHARDS);
            snprintf(names[n++], sizeof(names[0]), "%s", file);
            char path[4096 + 256];
            snprintf(path, sizeof(path), "%s/%s", dir, file);
            load_shard(s, path);
        }
        int shard = 0;
        while (strcmp(names[shard], file) != 0) shard++;
        if (safetensors_find(&s->files[shard], e->string) == NULL) {
            fatal("%s: tensor '%s' is not in %s/%s as the index says", index_path, e->string, dir, file);
        }
    }
    int mapped = 0, stored = 0;
    for (const cJSON *e = map->child; e != NULL; e = e->next) mapped++;
    for (int i = 0; i < s->count; i++) stored += s->files[i].count;
    if (stored != mapped) {
        fatal("%s: the shards hold %d tensors but the index maps %d", index_path, stored, mapped);
    }
    cJSON_Delete(root);
    free(text);
}

static void import_model(const char *src, const char *out_path) {
    char dir[4096], path[4096 + 64];
    Shards shards = {.count = 0};
    if (is_directory(src)) {
        snprintf(dir, sizeof(dir), "%s", src);
        snprintf(path, sizeof(path), "%s/model.safetensors.index.json", dir);
        if (exists(path)) {
            load_index(&shards, dir, path);
        } else {
            snprintf(path, sizeof(path), "%s/model.safetensors", dir);
            if (!exists(path)) fatal("%s: neither model.safetensors nor model.safetensors.index.json", src);
            load_shard(&shards, path);
        }
    } else {
        snprintf(dir, sizeof(dir), "%s", src);
        char *slash = strrchr(dir, '/');
        if (slash != NULL) *slash = '\0';
        else snprintf(dir, sizeof(dir), ".");
        load_shard(&shards, src);
    }
    snprintf(path, sizeof(path), "%s/config.json", dir);
    if (!exists(path)) fatal("%s: no config.json beside the weights (it gives n_head)", src);
    size_t len;
    unsigned char *config_text = read_whole(path, &len);
    HfGpt2Config hf;
    GPT2 model;
    char err[READER_ERR_BYTES];
    if (hf_gpt2_config_parse((const char *)config_text, len, &hf, err, sizeof(err)) != 0) fatal("%s: %s", path, err);
    free(config_text);
    if (hf_gpt2_import(&model, &hf, shards.files, shards.count, err, sizeof(err)) != 0) fatal("%s: %s", src, err);
    gpt2_save(&model, out_path);
    printf("%s -> %s: GPT-2 L=%d C=%d NH=%d V=%d (Vp %d) maxT=%d, %zu parameters, mode ln\n", src, out_path,
           model.config.num_layers, model.config.channels, model.config.num_heads, model.config.vocab_size,
           model.config.padded_vocab_size, model.config.max_seq_len, model.num_parameters);
    gpt2_free(&model);
    for (int i = 0; i < shards.count; i++) {
        safetensors_free(&shards.files[i]);
        free(shards.bytes[i]);
    }
}

static void export_model(const char *model_path, const char *dir) {
    GPT2 model;
    gpt2_load(&model, model_path);
    make_directories(dir);
    hf_gpt2_export(&model, dir);
    printf("%s (%s) -> %s/model.safetensors + config.json%s\n", model_path, norm_mode_name(model.mode), dir,
           norm_policy(model.mode)->cbwc ? ": the LayerNorm GPT-2 of its proxy weights (identical logits)" : "");
    gpt2_free(&model);
}

int main(int argc, char **argv) {
    CliSpec spec = {
        .program = "hf_gpt2",
        .synopsis = "import SRC OUT.bin | export MODEL.bin DIR",
        .about = "  import: Hugging Face GPT-2 (safetensors) -> llm.c model file\n"
                 "  export: llm.c model file (ln or cbwc) -> DIR/model.safetensors,\n"
                 "          DIR/config.json (transformers' GPT2LMHeadModel)\n"
                 "  SRC: a .safetensors file with config.json beside it, or a folder holding\n"
                 "       model.safetensors or model.safetensors.index.json and its shards\n",
        .min_positional = 3,
        .max_positional = 3,
    };
    const char *args[3];
    cli_parse(&spec, argc, argv, args);
    if (strcmp(args[0], "import") == 0) {
        import_model(args[1], args[2]);
    } else if (strcmp(args[0], "export") == 0) {
        export_model(args[1], args[2]);
    } else {
        cli_error(&spec, "unknown command '%s' (expected import or export)", args[0]);
    }
    return 0;
}
