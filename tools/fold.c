// fold: turns a model trained in ln or cbwc mode (or any llm.c GPT-2 file) into
// an inference model whose foldable LNs are RMSNorm and whose CBWC layers
// hold V and the centred bias directly (docs/math.md sections 3-5): a GPT-2
// (llmc/fold/gpt2_fold.c) or a ViT / Swin (llmc/fold/vision_fold.c), told apart by the
// file's magic. Which norms fold and which layers are centred comes from the
// zero-mean analysis of the model's graph, not from a fixed list.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/cli.h"
#include "gpt2/gpt2.h"
#include "fold/gpt2_fold.h"
#include "core/utils.h"
#include "fold/vision_fold.h"
#include "vision/vision_model.h"

static void fold_gpt2(const char *in_path, const char *out_path) {
    GPT2 model;
    gpt2_load(&model, in_path);
    gpt2_fold(&model, in_path);
    gpt2_save(&model, out_path);
    const int L = model.config.num_layers;
    printf("fold: %s -> %s: %d/%d LNs -> RMSNorm, %d layers centred (wte + m_t for the tied "
           "head, wpe, %d attn c_proj, %d mlp c_proj)\n",
           in_path, out_path, model.folded_norms, 2 * L + 1, 2 * L + 2, L, L);
    gpt2_free(&model);
}

static void fold_vision(const char *in_path, const char *out_path) {
    VisionConfig config;
    float *params;
    size_t n;
    vision_model_read(in_path, -1, &config, &params, &n);
    const NormMode mode = config.mode;
    VisionFoldReport r;
    vision_fold(&config, params, in_path, &r);
    vision_model_write(out_path, &config, params, n);
    printf("fold: %s -> %s: %s (%s), %d/%d LNs -> RMSNorm (the other %d stay LayerNorm), %d "
           "layers centred\n",
           in_path, out_path, vision_family_name(config.family), norm_mode_name(mode),
           r.folded_norms, r.num_norms, r.num_norms - r.folded_norms, r.centred_layers);
    free(params);
}

int main(int argc, char **argv) {
    CliSpec spec = {.program = "fold",
                    .synopsis = "IN.bin OUT.bin",
                    .about = "  IN.bin   a GPT-2 (llm.c's files are ln) or ViT / Swin model file in ln\n"
                             "           or cbwc mode\n"
                             "  OUT.bin  the folded inference model (norm mode 'folded', docs/formats.md)\n",
                    .min_positional = 2, .max_positional = 2};
    const char *args[2];
    cli_parse(&spec, argc, argv, args);
    const char *in_path = args[0], *out_path = args[1];
    const int32_t magic = file_magic(in_path);
    if (magic == GPT2_MODEL_MAGIC || magic == 0) {
        fold_gpt2(in_path, out_path);
    } else if (magic == VISION_MODEL_MAGIC) {
        fold_vision(in_path, out_path);
    } else {
        fatal("%s: not a GPT-2 model file (magic %d, expected %d) nor a ViT/Swin model file "
              "(magic %d)", in_path, magic, GPT2_MODEL_MAGIC, VISION_MODEL_MAGIC);
    }
    return EXIT_SUCCESS;
}
