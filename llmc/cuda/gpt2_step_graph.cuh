// CUDA graphs for GPT2Cuda's training micro-steps (train_gpt2.cu -cg 1): the
// forward and the backward down to the embeddings, about 97 % of a step's
// launches, captured once as a graph on the model's compute stream and then
// launched as one call per micro-step. What stays eager around the graph:
//   before: gpt2cuda_stage_batch (the batch's copies, this draw's dropout
//     keys or drop-path scales into device memory, cbwc's projection when stale);
//   after: the wte/wpe gradient (its grid follows the token buckets the host
//     built for the batch), then the step's clip and AdamW (their learning
//     rate, step and outlier limits are kernel arguments that change every
//     step) and the step's one wait, for the loss and the norm.
// A graph keeps each launch's arguments as they were at the capture: every
// value the micro-step takes from the host and that may change between
// micro-steps lives in device memory (the tokens, the dropout keys, the
// drop-path scales, the step scalars), and what is passed by value is the
// key below: when it differs from the captured one the micro-step is
// captured again. The capture runs nothing (the captured micro-step is then
// launched like any other), so no step runs twice. Needs one rank (the
// gradient reduction's events and collectives on a second stream are not
// captured) and a created stream (the legacy stream 0 cannot capture):
// gpt2_step_graph_init moves the model's work onto one.
#ifndef FOLDNORM_GPT2_STEP_GRAPH_CUH
#define FOLDNORM_GPT2_STEP_GRAPH_CUH

#include <stdlib.h>
#include <string.h>

#include "gpt2_cuda.cuh"

// what a captured micro-step took from the host by value
typedef struct {
    int B, T, counted, dropout_active, drop_active;
    float scale;
    const int *inputs, *targets;
} Gpt2GraphKey;

typedef struct {
    cudaStream_t stream;  // the model's compute stream while graphs are on
    cudaGraphExec_t exec; // NULL: none captured yet
    Gpt2GraphKey key;
    size_t nodes;         // of the last capture
    int captures, launches;
    // negative control (test/suites/cuda_graph_emu.sh): FOLDNORM_GRAPH_STALE_DROPOUT=1
    // puts the capture's dropout keys back before every launch, as if the
    // graph had taken them by value (stale_keys: the capture's, host)
    int stale_dropout;
    uint64_t *stale_keys;
} Gpt2StepGraph;

// Moves the model's work (kernels, cuBLAS(Lt), cuDNN plans made from here on)
// onto a created blocking stream, which stays ordered with the legacy stream
// the rest of the program uses. Before the model's first forward.
static inline void gpt2_step_graph_init(Gpt2StepGraph *g, GPT2Cuda *m) {
    memset(g, 0, sizeof(*g));
    CUDA_CHECK(cudaStreamCreate(&g->stream));
    m->mm.stream = g->stream;
    CUBLAS_CHECK(cublasSetStream(m->mm.blas, g->stream));
    const char *stale = getenv("FOLDNORM_GRAPH_STALE_DROPOUT");
    g->stale_dropout = stale != NULL && strcmp(stale, "1") == 0;
}

// back to the legacy stream, after the stream's work
static inline void gpt2_step_graph_free(Gpt2StepGraph *g, GPT2Cuda *m) {
    if (g->exec != NULL) CUDA_CHECK(cudaGraphExecDestroy(g->exec));
    CUDA_CHECK(cudaStreamSynchronize(g->stream));
    free(g->stale_keys);
    m->mm.stream = 0;
    CUBLAS_CHECK(cublasSetStream(m->mm.blas, 0));
    CUDA_CHECK(cudaStreamDestroy(g->stream));
    memset(g, 0, sizeof(*g));
}

// The micro-step's forward and backward (gpt2cuda_forward_batch, then
// gpt2cuda_backward with the same scale) through the graph, captured first
// when there is none or its key differs. The batch must count targets.
static inline void gpt2_step_graph_micro_step(Gpt2StepGraph *g, GPT2Cuda *m,
                                              const TokenBatch *batch, float scale,
                                              cudaEvent_t copied) {
    if (!batch->has_targets || batch->counted <= 0) {
        fatal("gpt2_step_graph_micro_step: a batch without counted targets");
    }
    if (m->mm.stream != g->stream) fatal("gpt2_step_graph_micro_step: the model is off the graph's stream");
    gpt2cuda_stage_batch(m, batch, copied);
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
    if (g->exec == NULL || memcmp(&key, &g->key, sizeof(key)) != 0) {
        cudaGraph_t graph;
        CUDA_CHECK(cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal));
        gpt2cuda_forward_launches(m, 1, batch->counted, scale);
        gpt2cuda_forward_done(m, 1, batch->counted, scale); // the backward asks whether dlogits exist
        gpt2cuda_backward_launches(m, scale);
        CUDA_CHECK(cudaStreamEndCapture(g->stream, &graph));
        CUDA_CHECK(cudaGraphGetNodes(graph, NULL, &g->nodes));
        if (g->exec != NULL) CUDA_CHECK(cudaGraphExecDestroy(g->exec));
        CUDA_CHECK(cudaGraphInstantiate(&g->exec, graph, 0));
        CUDA_CHECK(cudaGraphDestroy(graph));
        g->key = key;
        g->captures++;
        if (g->stale_dropout && m->dropout_active) {
            const size_t bytes = (size_t)m->config.num_layers * DROP_PATH_BRANCHES * sizeof(uint64_t);
            if (g->stale_keys == NULL) g->stale_keys = (uint64_t *)malloc_check(bytes, "stale keys");
            memcpy(g->stale_keys, m->dropout_keys_host, bytes);
        }
    } else if (g->stale_dropout && m->dropout_active) { // the negative control's stale keys
        CUDA_CHECK(cudaMemcpyAsync(m->dropout_keys, g->stale_keys,
                                   (size_t)m->config.num_layers * DROP_PATH_BRANCHES * sizeof(uint64_t),
                                   cudaMemcpyHostToDevice, g->stream));
    }
    CUDA_CHECK(cudaGraphLaunch(g->exec, g->stream));
    g->launches++;
    gpt2cuda_forward_done(m, 1, batch->counted, scale);
    gpt2cuda_backward_embeddings(m);
    gpt2cuda_backward_done(m);
}

#endif
