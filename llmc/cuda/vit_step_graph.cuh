// CUDA graphs for ViTCuda's training steps (train_vit.cu -cg 1,
// llmc/cuda/step_graph.cuh): the forward, the gradients' zeroing and the
// whole backward as one graph. Eager around it: before, the images' and
// labels' copies, this batch's drop-path scales and mixed targets into
// device memory (vitcuda_stage, classifier_cuda_set_drop_path / _mix_targets),
// cbwc's projection when stale; after, the clip, AdamW and the EMA (their
// learning rate and step are kernel arguments that change every step) and
// the step's one wait. What the captured work takes from the host by value
// is the key. ViT only (Swin steps run eager) and one rank (the gradient
// reduction is not captured).
#ifndef FOLDNORM_VIT_STEP_GRAPH_CUH
#define FOLDNORM_VIT_STEP_GRAPH_CUH

#include <string.h>

#include "step_graph.cuh"
#include "vit_cuda.cuh"

// what a captured step takes from the host by value
typedef struct {
    int B, drop_active, mix_active;
    float smoothing, loss_scale;
} VitGraphKey;

typedef struct {
    StepGraph graph;
    ViTCuda *model;
    float smoothing, loss_scale; // the step being captured
} VitStepGraph;

// before the model's first forward: its work moves to the graph's stream
static inline void vit_step_graph_init(VitStepGraph *g, ViTCuda *m) {
    memset(g, 0, sizeof(*g));
    step_graph_init(&g->graph, &m->mm);
    g->model = m;
}

static inline void vit_step_graph_free(VitStepGraph *g) {
    step_graph_free(&g->graph, &g->model->mm);
    memset(g, 0, sizeof(*g));
}

static inline void vit_step_graph_capture(void *ctx) {
    VitStepGraph *g = (VitStepGraph *)ctx;
    vitcuda_forward_launches(g->model, 1, g->smoothing);
    vitcuda_zero_grad(g->model);
    vitcuda_backward_launches(g->model, g->loss_scale);
}

// vitcuda_forward_queued with labels, vitcuda_zero_grad, vitcuda_backward
// through the graph (the drop-path scales and mixed targets set before)
static inline void vit_step_graph_step(VitStepGraph *g, const float *images, const int *labels,
                                       float smoothing, int B, float loss_scale) {
    ViTCuda *m = g->model;
    if (labels == NULL) fatal("vit_step_graph_step: a training step needs labels");
    vitcuda_stage(m, images, labels, B);
    VitGraphKey key;
    memset(&key, 0, sizeof(key));
    key.B = B;
    key.drop_active = m->drop_active;
    key.mix_active = m->mix.active;
    key.smoothing = smoothing;
    key.loss_scale = loss_scale;
    g->smoothing = smoothing;
    g->loss_scale = loss_scale;
    step_graph_run(&g->graph, &key, sizeof(key), vit_step_graph_capture, g);
    vitcuda_forward_done(m, 1, smoothing);
    m->backward_ready = 0; // the backward ran
}

#endif
