// How a CPU trainer's process starts: the stop signals first (before any
// thread starts: SIGINT, SIGTERM, SIGUSR1 finish the step, write a checkpoint
// and exit, stop_signal.h), then MPI (under mpirun every rank trains on its
// slice of each batch; rank 0 alone prints, logs and checkpoints, so the other
// ranks' stdout goes to /dev/null), and the ranks as the shared set-up sees them.
#ifndef FOLDNORM_COMM_TRAINER_H
#define FOLDNORM_COMM_TRAINER_H

#include "comm.h"
#include "train_ranks.h"

void comm_trainer_start(Comm *comm, int *argc, char ***argv);
// TrainRanks over MPI; comm must outlive it
TrainRanks comm_train_ranks(Comm *comm);

#endif
