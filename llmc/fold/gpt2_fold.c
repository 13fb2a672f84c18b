// Folding a trained ln-mode GPT-2 into an inference model (docs/math.md
// sections 3-5): the zero-mean analysis of its graph decides which norms
// become RMSNorm and which layers hold V and the centred bias.
#include "gpt2_fold.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cbwc.h"
#include "graph.h"
#include "core/utils.h"

// Which GPT-2 tensor a node of graph_gpt2_text is; sets *layer for per-layer ones.
static int gpt2_tensor_flag(const char *name, int *layer) {
    char rest[GRAPH_MAX_NAME];
    *layer = -1;
    if (strcmp(name, "wte") == 0) {
        return GPT2_FOLDED_WTE;
    }
    if (strcmp(name, "wpe") == 0) {
        return GPT2_FOLDED_WPE;
    }
    if (sscanf(name, "h%d.%63s", layer, rest) == 2) {
        if (strcmp(rest, "attn.c_proj") == 0) {
            return GPT2_FOLDED_ATTPROJ;
        }
        if (strcmp(rest, "mlp.c_proj") == 0) {
            return GPT2_FOLDED_FCPROJ;
        }
    }
    return 0;
}

void gpt2_fold(GPT2 *model, const char *source) {
    // a cbwc model is the ln model of its proxy weights (LN(Wx+b) = RMS(Vx+b~)),
    // so both fold the same way; the policy says which modes are not
    const char *refusal = norm_policy(model->mode)->fold_refusal;
    if (refusal != NULL) {
        fatal("%s: norm mode is '%s': %s (fold takes an ln or cbwc model)", source,
              norm_mode_name(model->mode), refusal);
    }
    const GPT2Config *cfg = &model->config;
    const int L = cfg->num_layers, C = cfg->channels, Vp = cfg->padded_vocab_size;

    // the analysis decides what folds
    char *text = graph_gpt2_text(L, C, cfg->num_heads, cfg->vocab_size);
    Graph g;
    char err[768];
    if (graph_parse(&g, text, "gpt2 graph", err, sizeof(err)) != 0) {
        fatal("internal: %s", err);
    }
    free(text);
    GraphAnalysis a;
    graph_analyze(&g, &a);
    if (a.num_foldable != a.num_layernorms || a.leak_layer >= 0) {
        fatal("%s: the analysis folds %d/%d LNs (exact: %s); this file layout stores only fully "
              "folded GPT-2 models", source, a.num_foldable, a.num_layernorms,
              a.leak_layer < 0 ? "yes" : "no");
    }
    int flags = 0;
    int *attproj_done = calloc_check((size_t)L, sizeof(int), "fold layers");
    int *fcproj_done = calloc_check((size_t)L, sizeof(int), "fold layers");
    ParameterTensors *p = &model->params;
    model->head_row_means = malloc_check((size_t)Vp * sizeof(float), "head row means");
    for (int i = 0; i < g.num_nodes; i++) {
        if (!graph_bit(a.cbwc_set, i)) {
            continue;
        }
        int l;
        int flag = gpt2_tensor_flag(g.nodes[i].name, &l);
        if (flag == 0 || (l >= L) || ((flag & (GPT2_FOLDED_ATTPROJ | GPT2_FOLDED_FCPROJ)) && l < 0)) {
            fatal("internal: the analysis centres %s, which has no GPT-2 tensor", g.nodes[i].name);
        }
        flags |= flag;
        if (flag == GPT2_FOLDED_WTE) {
            // tied head: keep m_t = mean(W_t) so logits stay h . W_t exactly (section 4)
            for (int t = 0; t < Vp; t++) {
                double sum = 0.0;
                for (int c = 0; c < C; c++) {
                    sum += p->wte[(size_t)t * C + c];
                }
                model->head_row_means[t] = (float)(sum / C);
                for (int c = 0; c < C; c++) {
                    p->wte[(size_t)t * C + c] -= model->head_row_means[t];
                }
            }
        } else if (flag == GPT2_FOLDED_WPE) {
            cbwc_centre_rows(p->wpe, p->wpe, cfg->max_seq_len, C);
        } else if (flag == GPT2_FOLDED_ATTPROJ) {
            size_t lc = (size_t)l * C;
            cbwc_project_weights(p->attprojw + lc * C, p->attprojb + lc, p->attprojw + lc * C,
                                 p->attprojb + lc, C, C);
            attproj_done[l] = 1;
        } else {
            size_t lc = (size_t)l * C;
            cbwc_project_weights(p->fcprojw + 4 * lc * C, p->fcprojb + lc, p->fcprojw + 4 * lc * C,
                                 p->fcprojb + lc, C, 4 * C);
            fcproj_done[l] = 1;
        }
    }
    for (int l = 0; l < L; l++) {
        if (!attproj_done[l] || !fcproj_done[l]) {
            fatal("internal: the analysis left layer %d's projections uncentred", l);
        }
    }
    if (flags != GPT2_FOLDED_ALL) {
        fatal("internal: the analysis centred tensor set %d, expected %d", flags, GPT2_FOLDED_ALL);
    }
    model->mode = MODE_FOLDED;
    model->folded_norms = a.num_foldable;
    model->folded_layers = flags;
    free(attproj_done);
    free(fcproj_done);
    graph_analysis_free(&a);
    graph_free(&g);
}
