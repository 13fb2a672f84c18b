// A trainer's ranks for the shared set-up (train_ranks.h).
#include "train_ranks.h"

#include <limits.h>

int train_ranks_max(const TrainRanks *ranks, int value) {
    return ranks->world > 1 ? ranks->max_int(ranks->ctx, value) : value;
}

int train_ranks_min(const TrainRanks *ranks, int value) {
    return -train_ranks_max(ranks, -value);
}

int train_ranks_from_lead(const TrainRanks *ranks, int value) {
    return train_ranks_max(ranks, ranks->rank == 0 ? value : INT_MIN);
}
