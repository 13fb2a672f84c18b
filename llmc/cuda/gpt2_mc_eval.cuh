// llm.c's multiple-choice score (llmc/gpt2/mc_eval.h: the completion of
// lowest mean token loss wins) through the GPU model's forward: the same rows
// and the same pick as the CPU trainer's, the per-position losses copied back.
#ifndef FOLDNORM_GPT2_MC_EVAL_CUH
#define FOLDNORM_GPT2_MC_EVAL_CUH

extern "C" {
#include "gpt2/mc_eval.h"
}

#include "gpt2_cuda.cuh"

// Scores examples first, first + stride, ... with rows of T tokens, the
// completions of one example in forwards of at most max_B rows; returns how
// many the model answers right and adds the number scored to *scored. Waits
// for the GPU after each forward (the losses come back to the host).
static inline int gpt2cuda_mc_eval_score(GPT2Cuda *m, const McEvalSet *set, int first,
                                         int stride, int T, int *scored) {
    if (set->longest_row > T || T > m->max_T) {
        fatal("multiple-choice eval: a row of %d tokens does not fit -t %d (allocated %d)",
              set->longest_row, T, m->max_T);
    }
    const size_t rows_max = MC_MAX_COMPLETIONS * (size_t)T;
    int *inputs = (int *)malloc_check(rows_max * sizeof(int), "eval rows");
    int *targets = (int *)malloc_check(rows_max * sizeof(int), "eval targets");
    float *losses = (float *)malloc_check(rows_max * sizeof(float), "eval losses");
    int correct = 0;
    for (int i = first; i < set->count; i += stride) {
        const McExample *e = &set->examples[i];
        mc_eval_rows(e, T, inputs, targets);
        for (int r = 0; r < e->num_completions; r += m->max_B) {
            const int rows = e->num_completions - r < m->max_B ? e->num_completions - r : m->max_B;
            const size_t at = (size_t)r * T;
            gpt2cuda_forward(m, inputs + at, targets + at, rows, T, 0.0f);
            CUDA_CHECK(cudaMemcpyAsync(losses + at, m->acts.losses, (size_t)rows * T * sizeof(float),
                                       cudaMemcpyDeviceToHost, m->mm.stream));
            CUDA_CHECK(cudaStreamSynchronize(m->mm.stream));
        }
        correct += mc_eval_pick(e, targets, losses, T) == e->label;
        (*scored)++;
    }
    free(inputs);
    free(targets);
    free(losses);
    return correct;
}

#endif
