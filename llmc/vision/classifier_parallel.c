#include "classifier_parallel.h"

#include <math.h>

double classifier_parallel_update(Classifier *model, const Comm *comm, int zero_stage,
                                  const AdamWConfig *cfg, float grad_clip) {
    const size_t n = classifier_num_parameters(model);
    float *grads = classifier_grads(model);
    if (zero_stage != 1 || comm->world_size == 1) {
        comm_allreduce_mean(comm, grads, n); // a no-op on one rank
        double norm = classifier_grad_norm(model);
        classifier_update(model, cfg, grad_clip);
        return norm;
    }
    // ZeRO-1: this rank gets the mean gradient of its shard only; the global
    // norm is the sum of the shards' squares
    size_t lo, hi;
    comm_shard_range(comm, n, comm->rank, &lo, &hi);
    comm_reduce_scatter_mean(comm, grads, n);
    double grad_sq = sum_of_squares(grads + lo, hi - lo);
    comm_sum_double(comm, &grad_sq);
    double norm = sqrt(grad_sq);
    classifier_update_shard(model, cfg, clip_grad_scale(norm, grad_clip), lo, hi);
    comm_allgather_shards(comm, classifier_params(model), n);
    return norm;
}

void classifier_parallel_gather_moments(Classifier *model, const Comm *comm, int zero_stage) {
    ClassifierAdamW adamw = classifier_adamw(model);
    if (zero_stage != 1 || comm->world_size == 1 || *adamw.m == NULL) {
        return;
    }
    const size_t n = classifier_num_parameters(model);
    comm_allgather_shards(comm, *adamw.m, n);
    comm_allgather_shards(comm, *adamw.v, n);
}

void classifier_parallel_update_ema(Classifier *model, const Comm *comm, int zero_stage,
                                    WeightEma *ema) {
    const size_t n = classifier_num_parameters(model);
    size_t lo = 0, hi = n;
    if (zero_stage == 1 && comm->world_size > 1) {
        comm_shard_range(comm, n, comm->rank, &lo, &hi);
    }
    ema_update(ema->values + lo, classifier_params(model) + lo, hi - lo, ema->decay);
}

void classifier_parallel_gather_ema(const Classifier *model, const Comm *comm, int zero_stage,
                                    WeightEma *ema) {
    if (zero_stage == 1 && comm->world_size > 1) {
        comm_allgather_shards(comm, ema->values, classifier_num_parameters(model));
    }
}
