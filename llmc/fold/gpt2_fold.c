// Folding a trained ln-mode GPT-2 into an inference model (docs/math.md
// sections 3-5): the tensor table (gpt2.h) and the norm policy say which
// layers a folded model holds centred; every norm becomes RMSNorm.
#include "gpt2_fold.h"

#include <stdlib.h>

#include "kernels/cbwc.h"
#include "core/utils.h"

// the tied head: keep m_t = mean(W_t) so logits stay h . W_t exactly (section 4)
static void centre_tied_embedding(GPT2 *model) {
    const int C = model->config.channels, Vp = model->config.padded_vocab_size;
    float *wte = model->params.wte;
    model->head_row_means = malloc_check((size_t)Vp * sizeof(float), "head row means");
    for (int t = 0; t < Vp; t++) {
        double sum = 0.0;
        for (int c = 0; c < C; c++) {
            sum += wte[(size_t)t * C + c];
        }
        model->head_row_means[t] = (float)(sum / C);
        for (int c = 0; c < C; c++) {
            wte[(size_t)t * C + c] -= model->head_row_means[t];
        }
    }
}

void gpt2_fold(GPT2 *model, const char *source) {
    // a cbwc model is the ln model of its proxy weights (LN(Wx+b) = RMS(Vx+b~)),
    // so both fold the same way; the policy says which modes are not
    const char *refusal = norm_policy(model->mode)->fold_refusal;
    if (refusal != NULL) {
        fatal("%s: norm mode is '%s': %s (fold takes an ln or cbwc model)", source,
              norm_mode_name(model->mode), refusal);
    }
    const NormPolicy *folded = norm_policy(MODE_FOLDED);
    const int L = model->config.num_layers, C = model->config.channels;
    float **tensors = (float **)&model->params; // ParameterTensors' fields in file order
    int flags = 0, norms = 0;
    for (int i = 0; i < GPT2_NUM_PARAM_TENSORS; i++) {
        const GPT2TensorInfo *t = gpt2_tensor_info(i);
        const int chunks = t->per_layer ? L : 1;
        if (t->role == LAYER_ROLE_NORM && !t->is_bias) {
            norms += chunks; // one gain per norm
        }
        if (!norm_policy_centres(folded, t->role) || t->is_bias) {
            continue; // a bias centres with its weight
        }
        flags |= t->folded_bit;
        const size_t chunk_n = model->param_sizes[i] / (size_t)chunks;
        if (i == GPT2_WTE) {
            centre_tied_embedding(model);
        } else if (t->bias_of < 0) { // an embedding: rows of C
            cbwc_centre_rows(tensors[i], tensors[i], (int)(chunk_n / (size_t)C), C);
        } else { // a projection onto the stream: (C, IC) weights and C biases per layer
            for (int l = 0; l < chunks; l++) {
                float *w = tensors[i] + (size_t)l * chunk_n;
                float *b = tensors[t->bias_of] + (size_t)l * C;
                cbwc_project_weights(w, b, w, b, C, (int)(chunk_n / (size_t)C));
            }
        }
    }
    if (flags != GPT2_FOLDED_ALL) {
        fatal("internal: the tensor table centres set %d, expected %d", flags, GPT2_FOLDED_ALL);
    }
    model->mode = MODE_FOLDED;
    model->folded_norms = norms;
    model->folded_layers = flags;
}
