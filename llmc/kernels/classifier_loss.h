// Softmax cross-entropy with label smoothing for image classifiers, as
// torch's F.cross_entropy(label_smoothing=s): the target distribution is
// q = (1 - s) onehot(y) + s / K, loss = -sum_k q_k log softmax(z)_k.
// With mixed targets (mixup / cutmix, as timm's mixup_target composes them
// with smoothing): q_n = lam_n t(y_n) + (1 - lam_n) t(y2_n), t(y) the
// smoothed one-hot, i.e. s / K + (1 - s) (lam_n onehot(y_n) + (1 - lam_n) onehot(y2_n)).
#ifndef FOLDNORM_CLASSIFIER_LOSS_H
#define FOLDNORM_CLASSIFIER_LOSS_H

// Each row's second label and the weight of its first; {NULL, NULL}: one label a row.
typedef struct {
    const int *labels2;
    const float *lam;
} MixTargets;

// losses[n] for N rows of K logits.
void classifier_loss_forward(float *losses, const float *logits, const int *labels, MixTargets mix,
                             float smoothing, int N, int K);
// dlogits[n] = scale * (softmax(z_n) - q_n) (dlogits may alias logits).
void classifier_loss_backward(float *dlogits, const float *logits, const int *labels,
                              MixTargets mix, float smoothing, float scale, int N, int K);
// Number of rows whose label is among the k largest logits (ties: the lower
// index first; k = 1: the top-1 hits, k >= K: every row without a NaN).
int classifier_topk_count(const float *logits, const int *labels, int N, int K, int k);

#endif
