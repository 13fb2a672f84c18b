// Folding a trained ln or cbwc ViT / Swin (docs/math.md sections 3 and 5):
// the analysis of the graph built from the model's config names the foldable
// LNs and the CBWC set; each node of that set is mapped to its tensors here.
#include "vision_fold.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cbwc.h"
#include "graph.h"
#include "core/utils.h"
#include "vision/vision_layout.h"

char *vision_graph_text(const VisionConfig *config) {
    if (config->family == FAMILY_VIT) {
        const ViTConfig *c = &config->vit;
        return graph_vit_text(c->image_channels * c->patch_size * c->patch_size, c->channels,
                              c->num_layers, c->num_heads, c->mlp_ratio * c->channels,
                              c->num_classes);
    }
    const SwinConfig *c = &config->swin;
    int shifted[SWIN_MAX_STAGES];
    for (int s = 0; s < c->num_stages; s++) {
        shifted[s] = swin_stage_resolution(c, s) > c->window; // as swin.c's blocks
    }
    return graph_swin_text(c->image_channels * c->patch_size * c->patch_size, c->embed_dim,
                           c->num_stages, c->depths, c->heads, shifted, c->mlp_ratio,
                           c->num_classes, c->centre_ops);
}

// Does the forward of a folded model (vit.c, swin.c) run LN node `name` as
// RMSNorm? -1 for a name that is no norm of the model.
static int norm_runs_rms(const VisionConfig *config, const char *name) {
    char rest[GRAPH_MAX_NAME];
    int s, k;
    if (config->family == FAMILY_VIT) {
        return 1; // every ViT norm reads the stream (or the final stream)
    }
    const SwinConfig *c = &config->swin;
    if (strcmp(name, "patch_embed.norm") == 0) {
        return 1;
    }
    if (strcmp(name, "norm") == 0) {
        return swin_stage_stream_zero_mean(c, c->num_stages - 1);
    }
    if (sscanf(name, "layers.%d.blocks.%d.%63s", &s, &k, rest) == 3 && s >= 0 &&
        s < c->num_stages && (strcmp(rest, "norm1") == 0 || strcmp(rest, "norm2") == 0)) {
        return swin_stage_stream_zero_mean(c, s);
    }
    if (sscanf(name, "layers.%d.downsample.%63s", &s, rest) == 2 && s >= 0 &&
        s + 1 < c->num_stages && strcmp(rest, "norm") == 0) {
        return c->centre_ops;
    }
    return -1;
}

// Centres ViT's tensors of CBWC node `name`; 0, or -1 for a name with none.
static int vit_centre(const ViTConfig *c, float *params, const char *name) {
    size_t sizes[VIT_NUM_PARAM_TENSORS];
    vit_param_sizes(sizes, c);
    float *p[VIT_NUM_PARAM_TENSORS]; // the tensors back to back in file order
    p[0] = params;
    for (int i = 1; i < VIT_NUM_PARAM_TENSORS; i++) {
        p[i] = p[i - 1] + sizes[i - 1];
    }
    const int C = c->channels, H = c->mlp_ratio * C;
    const int PD = c->image_channels * c->patch_size * c->patch_size;
    char rest[GRAPH_MAX_NAME];
    int l;
    if (strcmp(name, "patch_embed.proj") == 0) {
        cbwc_project_weights(p[VIT_PATCHW], p[VIT_PATCHB], p[VIT_PATCHW], p[VIT_PATCHB], C, PD);
    } else if (strcmp(name, "cls_token") == 0) {
        cbwc_centre_rows(p[VIT_CLS], p[VIT_CLS], 1, C);
    } else if (strcmp(name, "pos_embed") == 0) {
        cbwc_centre_rows(p[VIT_POS], p[VIT_POS], vit_num_tokens(c), C);
    } else if (sscanf(name, "blocks.%d.%63s", &l, rest) == 2 && l >= 0 && l < c->num_layers &&
               strcmp(rest, "attn.proj") == 0) {
        size_t lc = (size_t)l * C;
        cbwc_project_weights(p[VIT_ATTPROJW] + lc * C, p[VIT_ATTPROJB] + lc, p[VIT_ATTPROJW] + lc * C,
                             p[VIT_ATTPROJB] + lc, C, C);
    } else if (sscanf(name, "blocks.%d.%63s", &l, rest) == 2 && l >= 0 && l < c->num_layers &&
               strcmp(rest, "mlp.fc2") == 0) {
        size_t lc = (size_t)l * C;
        cbwc_project_weights(p[VIT_FCPROJW] + lc * H, p[VIT_FCPROJB] + lc, p[VIT_FCPROJW] + lc * H,
                             p[VIT_FCPROJB] + lc, C, H);
    } else {
        return -1;
    }
    return 0;
}

// Centres Swin's tensors of CBWC node `name`; 0, or -1 for a name with none.
static int swin_centre(const SwinConfig *c, const SwinOffsets *o, float *p, const char *name) {
    char rest[GRAPH_MAX_NAME];
    int s, k;
    if (strcmp(name, "patch_embed.proj") == 0) {
        cbwc_project_weights(p + o->patchw, p + o->patchb, p + o->patchw, p + o->patchb,
                             c->embed_dim, c->image_channels * c->patch_size * c->patch_size);
        return 0;
    }
    if (sscanf(name, "layers.%d.blocks.%d.%63s", &s, &k, rest) == 3 && s >= 0 &&
        s < c->num_stages && k >= 0 && k < c->depths[s]) {
        int b = k;
        for (int i = 0; i < s; i++) {
            b += c->depths[i];
        }
        const SwinBlockOffsets *bo = &o->blocks[b];
        const int C = c->embed_dim << s;
        if (strcmp(rest, "attn.proj") == 0) {
            cbwc_project_weights(p + bo->projw, p + bo->projb, p + bo->projw, p + bo->projb, C, C);
            return 0;
        }
        if (strcmp(rest, "mlp.fc2") == 0) {
            cbwc_project_weights(p + bo->fc2w, p + bo->fc2b, p + bo->fc2w, p + bo->fc2b, C,
                                 c->mlp_ratio * C);
            return 0;
        }
        return -1;
    }
    // layers.S.downsample merges stage S into stage S + 1 (swin.h: merges[S + 1])
    if (sscanf(name, "layers.%d.downsample.%63s", &s, rest) == 2 && s >= 0 &&
        s + 1 < c->num_stages && strcmp(rest, "reduction") == 0) {
        const int C_in = c->embed_dim << s;
        float *w = p + o->merges[s + 1].redw;
        cbwc_project_weights(w, NULL, w, NULL, 2 * C_in, 4 * C_in);
        return 0;
    }
    return -1;
}

void vision_fold(VisionConfig *config, float *params, const char *source,
                 VisionFoldReport *report) {
    const char *refusal = norm_policy(config->mode)->fold_refusal;
    if (refusal != NULL) {
        fatal("%s: norm mode is '%s': %s (fold takes an ln or cbwc model)", source,
              norm_mode_name(config->mode), refusal);
    }
    if (config->family == FAMILY_SWIN && config->swin.paper_variant) {
        fatal("%s: the Swin paper variant (header slot 15) is not an ln model of its weights "
              "(docs/math.md section 3), so it has no exact fold",
              source);
    }
    // a cbwc model is the ln model of its proxy weights (LN(Wx+b) = RMS(Vx+b~)),
    // so both fold the same way
    char *text = vision_graph_text(config);
    Graph g;
    char err[768];
    if (graph_parse(&g, text, "vision graph", err, sizeof(err)) != 0) {
        fatal("internal: %s", err);
    }
    free(text);
    GraphAnalysis a;
    graph_analyze(&g, &a);
    if (a.leak_layer >= 0) {
        fatal("internal: %s: the analysis' fold of this %s is not exact (%s reaches %s)", source,
              vision_family_name(config->family), g.nodes[a.leak_layer].name,
              a.leak_reader >= 0 ? g.nodes[a.leak_reader].name : "the output");
    }
    // the analysis' foldable LNs must be the norms the folded forward runs as RMS
    int num_norms = 0;
    for (int i = 0; i < g.num_nodes; i++) {
        if (g.nodes[i].op != OP_LAYERNORM) {
            continue;
        }
        num_norms++;
        const int rms = norm_runs_rms(config, g.nodes[i].name);
        if (rms != graph_ln_foldable(&g, &a, i)) {
            fatal("internal: %s: the analysis calls %s %s, the folded model runs it as %s",
                  source, g.nodes[i].name, graph_ln_foldable(&g, &a, i) ? "foldable" : "not foldable",
                  rms == 1 ? "RMSNorm" : rms == 0 ? "LayerNorm" : "no norm it has");
        }
    }
    if (num_norms != vision_num_norms(config) || a.num_foldable != vision_num_foldable_norms(config)) {
        fatal("internal: %s: the analysis folds %d/%d norms, the model has %d/%d", source,
              a.num_foldable, num_norms, vision_num_foldable_norms(config), vision_num_norms(config));
    }
    TensorTable table;
    SwinOffsets offsets = {0};
    if (config->family == FAMILY_SWIN) {
        swin_layout(&config->swin, &table, &offsets);
        tensor_table_free(&table);
    }
    int centred = 0;
    for (int i = 0; i < g.num_nodes; i++) {
        if (!graph_bit(a.cbwc_set, i)) {
            continue;
        }
        int rc = config->family == FAMILY_VIT
                     ? vit_centre(&config->vit, params, g.nodes[i].name)
                     : swin_centre(&config->swin, &offsets, params, g.nodes[i].name);
        if (rc != 0) {
            fatal("internal: the analysis centres %s, which has no %s tensor", g.nodes[i].name,
                  vision_family_name(config->family));
        }
        centred++;
    }
    free(offsets.blocks);
    *report = (VisionFoldReport){num_norms, a.num_foldable, centred};
    config->mode = MODE_FOLDED;
    graph_analysis_free(&a);
    graph_free(&g);
}
