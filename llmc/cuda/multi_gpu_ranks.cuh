// The GPU trainers' ranks as the shared set-up sees them (core/train_ranks.h):
// MultiGpu's processes, the largest int over them by an all-reduce.
#ifndef FOLDNORM_MULTI_GPU_RANKS_CUH
#define FOLDNORM_MULTI_GPU_RANKS_CUH

#include "multi_gpu.cuh"
extern "C" {
#include "core/train_ranks.h"
}

static inline int multi_gpu_ranks_max_int(void *ctx, int value) {
    return multi_gpu_max_int((MultiGpu *)ctx, value);
}

// num_processes: -pn; "mpirun -np N" in a stop's resume command only when
// mpirun started the ranks (-pn 0)
static inline TrainRanks multi_gpu_train_ranks(MultiGpu *mg, int num_processes) {
    TrainRanks ranks;
    ranks.rank = mg->rank;
    ranks.world = mg->world;
    ranks.report_ranks = num_processes == 0 ? mg->world : 1;
    ranks.ctx = mg;
    ranks.max_int = multi_gpu_ranks_max_int;
    return ranks;
}

#endif
