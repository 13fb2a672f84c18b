// Softmax cross-entropy over the first V of Vp logits per row (llm.c pads the
// vocabulary to Vp; the padded logits take no part).
#ifndef FOLDNORM_CROSSENTROPY_H
#define FOLDNORM_CROSSENTROPY_H

// losses[n] = logsumexp(logits[n][:V]) - logits[n][target[n]]; a target < 0
// (-1, as PyTorch's ignore_index) masks the position out: loss 0, gradient 0.
// row_stats (2N floats) gets each row's softmax normaliser, max m and
// 1 / sum exp(x - m) (also for masked rows), which the backward reuses so that
// it is one pass over the logits.
void crossentropy_forward(float *losses, float *row_stats, const float *logits, const int *targets,
                          int N, int V, int Vp);
// Overwrites logits with dlogits = scale * (softmax(logits) - onehot(target)),
// zero in the padded columns; row_stats from crossentropy_forward on the same
// logits.
void crossentropy_backward_inplace(float *logits, const float *row_stats, const int *targets,
                                   float scale, int N, int V, int Vp);

#endif
