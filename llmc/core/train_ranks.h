// A trainer's ranks as the shared set-up sees them, the same for the CPU's
// MPI Comm and the GPU's MultiGpu: who this rank is, how many there are, and
// the one collective the set-up needs (the largest int over the ranks), from
// which the smallest and rank 0's value follow.
#ifndef FOLDNORM_TRAIN_RANKS_H
#define FOLDNORM_TRAIN_RANKS_H

typedef struct {
    int rank, world;
    int report_ranks; // the -np of the resume command a stop prints
    void *ctx;
    int (*max_int)(void *ctx, int value); // every rank calls it: a barrier too
} TrainRanks;

int train_ranks_max(const TrainRanks *ranks, int value);
// value > INT_MIN (it is negated)
int train_ranks_min(const TrainRanks *ranks, int value);
// rank 0's value, on every rank
int train_ranks_from_lead(const TrainRanks *ranks, int value);

#endif
