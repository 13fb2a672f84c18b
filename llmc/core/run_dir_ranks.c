// A run folder under several ranks (run_dir_ranks.h).
#include "run_dir_ranks.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "utils.h"

void run_dir_ranks_announce(const TrainRanks *ranks, const char *dir) {
    if (ranks->world == 1 || ranks->rank != 0) {
        return;
    }
    char full[PATH_MAX];
    printf("output: rank 0 on host %s writes main.log and the checkpoints to %s\n",
           host_name(), realpath(dir, full) != NULL ? full : dir);
    fflush(stdout);
}

// "step 12" or "no checkpoint"
static const char *describe(int step, char *buf, size_t cap) {
    if (step < 0) {
        snprintf(buf, cap, "no checkpoint");
    } else {
        snprintf(buf, cap, "step %d", step);
    }
    return buf;
}

void run_dir_ranks_check(const TrainRanks *ranks, const char *dir, int step, const char *what) {
    const int first = train_ranks_from_lead(ranks, step);
    // every rank learns whether any disagrees, so none goes on alone
    const int differs = train_ranks_max(ranks, step != first);
    if (step != first) {
        char mine[32], theirs[32];
        fatal("rank %d on host %s finds %s in %s where rank 0 finds %s (the %s checkpoint): "
              "every rank reads the checkpoint it resumes from, so a host-local -o folder must "
              "be copied to every host first (or be on storage all hosts share)",
              ranks->rank, host_name(), describe(step, mine, sizeof(mine)), dir,
              describe(first, theirs, sizeof(theirs)), what);
    }
    if (differs) {
        fatal("rank %d on host %s: another rank finds another %s checkpoint in %s (its message "
              "says which); stopping",
              ranks->rank, host_name(), what, dir);
    }
}
