// CUDA graphs for GPT2Cuda's training micro-steps (train_gpt2.cu -cg 1,
// llmc/cuda/step_graph.cuh): the forward and the backward down to the
// embeddings, nearly all of a step's launches, as one graph. Eager around it:
//   before: gpt2cuda_stage_batch (the batch's copies, this draw's dropout
//     keys or drop-path scales into device memory, cbwc's projection when stale);
//   after: the wte/wpe gradient (its grid follows the token buckets the host
//     built for the batch), then the step's clip and AdamW (their learning
//     rate, step and outlier limits are kernel arguments that change every
//     step) and the step's one wait, for the loss and the norm.
// Every value the captured work takes from the host and that may change
// between micro-steps lives in device memory (the tokens, the dropout keys,
// the drop-path scales, the step scalars); the rest is the key. Needs one
// rank: the gradient reduction's events and collectives on a second stream
// are not captured.
#ifndef FOLDNORM_GPT2_STEP_GRAPH_CUH
#define FOLDNORM_GPT2_STEP_GRAPH_CUH

#include <stdlib.h>
#include <string.h>

#include "gpt2_cuda.cuh"
#include "step_graph.cuh"

// what a captured micro-step takes from the host by value
typedef struct {
    int B, T, counted, dropout_active, drop_active;
    float scale;
    const int *inputs, *targets;
} Gpt2GraphKey;

typedef struct {
    StepGraph graph;
    GPT2Cuda *model;
    int counted; // the micro-step being captured
    float scale;
    // negative control (test/suites/cuda_graph_emu.sh): FOLDNORM_GRAPH_STALE_DROPOUT=1
    // puts the capture's dropout keys back before every launch, as if the
    // graph had taken them by value (stale_keys: the capture's, host)
    int stale_dropout;
    uint64_t *stale_keys;
} Gpt2StepGraph;

// before the model's first forward: its work moves to the graph's stream
static inline void gpt2_step_graph_init(Gpt2StepGraph *g, GPT2Cuda *m) {
    memset(g, 0, sizeof(*g));
    step_graph_init(&g->graph, &m->mm);
    g->model = m;
    const char *stale = getenv("FOLDNORM_GRAPH_STALE_DROPOUT");
    g->stale_dropout = stale != NULL && strcmp(stale, "1") == 0;
}

static inline void gpt2_step_graph_free(Gpt2StepGraph *g) {
    step_graph_free(&g->graph, &g->model->mm);
    free(g->stale_keys);
    memset(g, 0, sizeof(*g));
}

// what the graph holds: the staged forward and the backward's launches
static inline void gpt2_step_graph_capture(void *ctx) {
    Gpt2StepGraph *g = (Gpt2StepGraph *)ctx;
    gpt2cuda_forward_launches(g->model, 1, g->counted, g->scale);
    gpt2cuda_forward_done(g->model, 1, g->counted, g->scale); // the backward asks whether dlogits exist
    gpt2cuda_backward_launches(g->model, g->scale);
}

// The micro-step's forward and backward (gpt2cuda_forward_batch, then
// gpt2cuda_backward with the same scale) through the graph. The batch must
// count targets.
static inline void gpt2_step_graph_micro_step(Gpt2StepGraph *g, const TokenBatch *batch,
                                              float scale, cudaEvent_t copied) {
    GPT2Cuda *m = g->model;
    if (!batch->has_targets || batch->counted <= 0) {
        fatal("gpt2_step_graph_micro_step: a batch without counted targets");
    }
    gpt2cuda_stage_batch(m, batch, copied);
    const size_t key_bytes = (size_t)m->config.num_layers * DROP_PATH_BRANCHES * sizeof(uint64_t);
    if (g->stale_dropout && m->dropout_active && g->stale_keys != NULL) {
        CUDA_CHECK(cudaMemcpyAsync(m->dropout_keys, g->stale_keys, key_bytes,
                                   cudaMemcpyHostToDevice, m->mm.stream));
    }
    Gpt2GraphKey key;
    memset(&key, 0, sizeof(key)); // no padding bytes left to compare
    key.B = m->B;
    key.T = m->T;
    key.counted = batch->counted;
    key.dropout_active = m->dropout_active;
    key.drop_active = m->drop_active;
    key.scale = scale;
    key.inputs = m->inputs;
    key.targets = m->targets;
    g->counted = batch->counted;
    g->scale = scale;
    const int captured = step_graph_run(&g->graph, &key, sizeof(key), gpt2_step_graph_capture, g);
    if (captured && g->stale_dropout && m->dropout_active) {
        if (g->stale_keys == NULL) g->stale_keys = (uint64_t *)malloc_check(key_bytes, "stale keys");
        memcpy(g->stale_keys, m->dropout_keys_host, key_bytes);
    }
    gpt2cuda_forward_done(m, 1, batch->counted, scale);
    gpt2cuda_backward_embeddings(m);
    gpt2cuda_backward_done(m);
}

#endif
