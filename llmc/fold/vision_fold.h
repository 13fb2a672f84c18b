// Folds a ViT or Swin trained in ln or cbwc mode into an inference model
// (docs/math.md sections 3 and 5): the zero-mean analysis of the model's
// graph (graph.h) decides which LNs become RMSNorm and which stream writers
// are centred in place (V = P W and P b for the patch embedding, attention
// projections, MLP fc2s and Swin's reductions; the cls token and position
// rows centred over C). The rest stays LayerNorm. The model becomes
// MODE_FOLDED with the same logits up to fp32 rounding.
#ifndef FOLDNORM_VISION_FOLD_H
#define FOLDNORM_VISION_FOLD_H

#include "vision/vision_config.h"

typedef struct {
    int num_norms;      // norms of the model
    int folded_norms;   // of them now RMSNorm (the analysis' foldable LNs)
    int centred_layers; // the analysis' CBWC set, stored centred
} VisionFoldReport;

// The analysis' graph of a model of this config (graph_builders.c's
// graph_vit_text / graph_swin_text; node names as the built-in vit-* and
// swin-* graphs). Caller frees.
char *vision_graph_text(const VisionConfig *config);

// params: the model's parameters in file order (vision_layout.h), folded in
// place; config->mode becomes MODE_FOLDED. Dies with a message naming source
// for an rms or already folded model.
void vision_fold(VisionConfig *config, float *params, const char *source,
                 VisionFoldReport *report);

#endif
