// Softmax cross-entropy over the first V of Vp logits per row (llm.c pads the
// vocabulary to Vp; the padded logits take no part).
#ifndef FOLDNORM_CROSSENTROPY_H
#define FOLDNORM_CROSSENTROPY_H

// losses[n] = logsumexp(logits[n][:V]) - logits[n][target[n]]; a target < 0
// (-1, as PyTorch's ignore_index) masks the position out: loss 0, gradient 0.
void crossentropy_forward(float *losses, const float *logits, const int *targets, int N, int V,
                          int Vp);
// Overwrites logits with dlogits = scale * (softmax(logits) - onehot(target)),
// zero in the padded columns.
void crossentropy_backward_inplace(float *logits, const int *targets, float scale, int N, int V,
                                   int Vp);

#endif
