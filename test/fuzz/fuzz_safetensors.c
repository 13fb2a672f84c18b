// safetensors (llmc/interop/safetensors.c) and the Hugging Face GPT-2 import
// (llmc/interop/hf_gpt2.c) on arbitrary bytes: the parser keeps every tensor inside
// the input, converts the float ones, and the import of a tiny GPT-2 config
// (L=1, C=4, NH=1, V=8, maxT=4; the seeds are such files) checks names,
// shapes, dtypes and the tied head without exiting.
#include "fuzz.h"
#include "interop/hf_gpt2.h"
#include "interop/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Safetensors st;
    char err[READER_ERR_BYTES] = {0};
    int rc = safetensors_parse(&st, data, size, err, sizeof(err));
    fuzz_check_error(rc, err, sizeof(err));
    if (rc != 0) {
        return 0;
    }
    for (int i = 0; i < st.count; i++) {
        const SafetensorsTensor *t = &st.tensors[i];
        if (t->data < data || t->data + t->bytes > data + size) {
            abort();
        }
        if (t->numel <= 4096) {
            float *out = malloc(t->numel * sizeof(float) + 1);
            if (out != NULL) {
                safetensors_to_f32(t, out);
                free(out);
            }
        }
    }
    HfGpt2Config cfg = {.n_layer = 1, .n_head = 1, .n_embd = 4, .n_positions = 4, .vocab_size = 8};
    GPT2 model;
    err[0] = '\0';
    rc = hf_gpt2_import(&model, &cfg, &st, 1, err, sizeof(err));
    fuzz_check_error(rc, err, sizeof(err));
    if (rc == 0) {
        gpt2_free(&model);
    }
    safetensors_free(&st);
    return 0;
}
