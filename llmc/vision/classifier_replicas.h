// Data-parallel steps over OpenMP threads on per-thread copies of a
// classifier (classifier.h says when and why). Internal to classifier.c.
#ifndef FOLDNORM_CLASSIFIER_REPLICAS_H
#define FOLDNORM_CLASSIFIER_REPLICAS_H

#include "classifier.h"

// How many copies a step on B images runs on: the thread count, or 1.
int replica_count(int B);
// The forward on count copies, each on its slice of the batch; the model's
// replicas are made on first use. Leaves the logits and mean loss in the replicas.
void replicas_forward(Classifier *model, int count, const float *images, const int *labels,
                      float smoothing, int B);
// Did the last forward run on the copies (then the next two read from them)?
int replicas_active(const ClassifierReplicas *r);
const float *replicas_logits(const ClassifierReplicas *r);
float replicas_mean_loss(const ClassifierReplicas *r);
// A later forward runs on the model itself.
void replicas_deactivate(ClassifierReplicas *r);
// The copies' backward; the model's gradients += theirs, in slice order.
void replicas_backward(Classifier *model, float loss_scale);
void replicas_free(ClassifierReplicas *r);

#endif
