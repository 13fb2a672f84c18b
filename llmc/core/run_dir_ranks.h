// A run folder under several ranks, maybe on several hosts: rank 0 alone
// writes main.log and the checkpoints, and says where (host and absolute
// path: a host-local folder stays on that host); every rank reads the
// checkpoint it resumes from, so every rank must see the same one.
#ifndef FOLDNORM_RUN_DIR_RANKS_H
#define FOLDNORM_RUN_DIR_RANKS_H

#include "train_ranks.h"

// Several ranks: rank 0 prints "output: rank 0 on host H writes main.log and
// the checkpoints to /ABS/DIR". Nothing with one rank.
void run_dir_ranks_announce(const TrainRanks *ranks, const char *dir);
// step: the checkpoint this rank sees in dir (-1: none); what: "newest" or
// "resumed". Dies on each rank whose step is not rank 0's, naming its host
// (a host-local folder must be copied to every host, or be on shared
// storage). Every rank calls it.
void run_dir_ranks_check(const TrainRanks *ranks, const char *dir, int step, const char *what);

#endif
