// fold: turns a GPT-2 model trained in ln or cbwc mode (or any llm.c GPT-2 file) into
// an inference model whose foldable LNs are RMSNorm and whose CBWC layers
// hold V and the centred bias directly (docs/math.md sections 3-5). Which
// norms fold and which layers are centred comes from the zero-mean analysis
// of the model's graph (llmc/gpt2_fold.c), not from a fixed list.
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "gpt2.h"
#include "gpt2_fold.h"

int main(int argc, char **argv) {
    CliSpec spec = {.program = "fold",
                    .synopsis = "IN.bin OUT.bin",
                    .about = "  IN.bin   a GPT-2 model file in ln or cbwc mode (llm.c's files are ln)\n"
                             "  OUT.bin  the folded inference model (norm mode 'folded', docs/formats.md)\n",
                    .min_positional = 2, .max_positional = 2};
    const char *args[2];
    cli_parse(&spec, argc, argv, args);
    const char *in_path = args[0], *out_path = args[1];
    GPT2 model;
    gpt2_load(&model, in_path);
    gpt2_fold(&model, in_path);
    gpt2_save(&model, out_path);
    const int L = model.config.num_layers;
    printf("fold: %s -> %s: %d/%d LNs -> RMSNorm, %d layers centred (wte + m_t for the tied "
           "head, wpe, %d attn c_proj, %d mlp c_proj)\n",
           in_path, out_path, model.folded_norms, 2 * L + 1, 2 * L + 2, L, L);
    gpt2_free(&model);
    return EXIT_SUCCESS;
}
