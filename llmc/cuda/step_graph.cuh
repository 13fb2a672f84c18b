// A training micro-step's device work as one CUDA graph: captured once on a
// created stream (the legacy stream 0 cannot capture), then launched as one
// call instead of hundreds of launches. A graph keeps each launch's
// arguments as they were at the capture (pointers by value, host scalars as
// they were), so a model keeps in device memory whatever changes between
// micro-steps and hands the rest to step_graph_run as a key: the bytes of
// every value the captured work took from the host. A key that differs from
// the captured one captures again. The capture itself runs nothing; the
// graph is then launched like any other time, so no work runs twice. What
// the capture may not contain (an allocation, a wait for the GPU, a host
// read of device memory, work on the legacy stream) fails it with CUDA's
// error, named by CUDA_CHECK (the emulator enforces the same rules:
// dev/cuda/emu/emu_graph.cpp). Models: gpt2_step_graph.cuh, vit_step_graph.cuh.
#ifndef FOLDNORM_STEP_GRAPH_CUH
#define FOLDNORM_STEP_GRAPH_CUH

#include <string.h>

#include "cuda_common.cuh"
#include "matmul_cublaslt.cuh"

#define STEP_GRAPH_KEY_BYTES 64

// -cg's flag-table entry (train_gpt2cu, train_vitcu), dest an int *; eager
// names the runs that launch every kernel on their own anyway
#define CUDA_GRAPHS_CLI_FLAG(dest, eager)                                                      \
    {"-cg", CLI_INT, dest, 0, 1,                                                                 \
     "CUDA graphs: 1 = each micro-step's forward and backward captured once\n"                 \
     "(after the first step) and launched as one graph (" eager " run eager);\n"               \
     "0 = every kernel launched on its own (default 1)", NULL, 0, 0}

typedef struct {
    cudaStream_t stream;  // the model's compute stream while graphs are on
    cudaGraphExec_t exec; // NULL: none captured yet
    unsigned char key[STEP_GRAPH_KEY_BYTES];
    size_t nodes;         // of the last capture
    int captures, launches;
} StepGraph;

// Moves a model's work (its matmul context: kernels, cuBLAS(Lt), and cuDNN
// plans made from here on) onto a created blocking stream, which stays
// ordered with the legacy stream the rest of the program uses. Before the
// model's first forward.
static inline void step_graph_init(StepGraph *g, MatmulContext *mm) {
    memset(g, 0, sizeof(*g));
    CUDA_CHECK(cudaStreamCreate(&g->stream));
    mm->stream = g->stream;
    CUBLAS_CHECK(cublasSetStream(mm->blas, g->stream));
}

// back to the legacy stream, after the stream's work
static inline void step_graph_free(StepGraph *g, MatmulContext *mm) {
    if (g->exec != NULL) CUDA_CHECK(cudaGraphExecDestroy(g->exec));
    CUDA_CHECK(cudaStreamSynchronize(g->stream));
    mm->stream = 0;
    CUBLAS_CHECK(cublasSetStream(mm->blas, 0));
    CUDA_CHECK(cudaStreamDestroy(g->stream));
    memset(g, 0, sizeof(*g));
}

// Launches the graph of what capture(ctx) queues on g->stream, capturing it
// first when there is none or `key` (key_bytes <= STEP_GRAPH_KEY_BYTES, its
// padding zeroed) differs from the captured one. Returns 1 when it captured.
static inline int step_graph_run(StepGraph *g, const void *key, size_t key_bytes,
                                 void (*capture)(void *ctx), void *ctx) {
    if (key_bytes > STEP_GRAPH_KEY_BYTES) {
        fprintf(stderr, "error: step_graph_run: a key of %zu bytes (room for %d)\n", key_bytes,
                STEP_GRAPH_KEY_BYTES);
        exit(EXIT_FAILURE);
    }
    int captured = 0;
    if (g->exec == NULL || memcmp(key, g->key, key_bytes) != 0) {
        cudaGraph_t graph;
        CUDA_CHECK(cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal));
        capture(ctx);
        CUDA_CHECK(cudaStreamEndCapture(g->stream, &graph));
        CUDA_CHECK(cudaGraphGetNodes(graph, NULL, &g->nodes));
        if (g->exec != NULL) CUDA_CHECK(cudaGraphExecDestroy(g->exec));
        CUDA_CHECK(cudaGraphInstantiate(&g->exec, graph, 0));
        CUDA_CHECK(cudaGraphDestroy(graph));
        memset(g->key, 0, sizeof(g->key));
        memcpy(g->key, key, key_bytes);
        g->captures++;
        captured = 1;
    }
    CUDA_CHECK(cudaGraphLaunch(g->exec, g->stream));
    g->launches++;
    return captured;
}

#endif
