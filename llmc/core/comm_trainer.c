// A CPU trainer's process start and its ranks (comm_trainer.h).
#include "comm_trainer.h"

#include <stdio.h>

#include "stop_signal.h"
#include "utils.h"

void comm_trainer_start(Comm *comm, int *argc, char ***argv) {
    stop_signal_install();
    comm_init(comm, argc, argv);
    if (comm->rank != 0 && freopen("/dev/null", "w", stdout) == NULL) {
        fatal("rank %d: cannot silence stdout", comm->rank);
    }
}

static int comm_ranks_max_int(void *ctx, int value) {
    return comm_max_int((const Comm *)ctx, value);
}

TrainRanks comm_train_ranks(Comm *comm) {
    return (TrainRanks){.rank = comm->rank, .world = comm->world_size,
                        .report_ranks = comm->world_size, .ctx = comm,
                        .max_int = comm_ranks_max_int};
}
