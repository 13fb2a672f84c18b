// GPT-2's gradient reduction overlapped with its backward on the CPU: the
// backward's hook (gpt2_set_grads_ready) posts each group of final gradients
// to the reduction thread (core/comm_async.h) as the GPU path hands its
// groups to NCCL (llmc/cuda/grad_sync.cuh): the final norm's, then each
// layer's slice of the twelve per-layer tensors, top layer first, then wte
// and wpe (the embedding's gradient is the last to be final).
#ifndef FOLDNORM_GPT2_GRAD_OVERLAP_H
#define FOLDNORM_GPT2_GRAD_OVERLAP_H

#include "core/comm_async.h"
#include "gpt2.h"

// The hook's context, the caller's from attach to finish.
typedef struct {
    GPT2 *model;
    CommAsync *async; // covers the model's gradients (grads_memory, num_parameters)
} Gpt2GradOverlap;

// The next gpt2_backward of model posts its groups to a.
void gpt2_grad_overlap_attach(Gpt2GradOverlap *o, GPT2 *model, CommAsync *a);
// Posts every group in the backward's order without a backward: a rank whose
// micro-batch has no loss tokens (SFT) still takes part in each collective.
void gpt2_grad_overlap_post_all(Gpt2GradOverlap *o);
// Unhooks the model and waits for the reductions (comm_async_finish).
void gpt2_grad_overlap_finish(Gpt2GradOverlap *o);

#endif
