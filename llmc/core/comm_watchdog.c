// The collectives' deadline (comm_watchdog.h).
#include "comm_watchdog.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "utils.h"

static struct {
    pthread_mutex_t mu;
    int started, rank;
    double timeout_s;
    char host[256];
    const char *what; // NULL: no collective in progress
    size_t count;
    double since;
} watch = {.mu = PTHREAD_MUTEX_INITIALIZER};

double comm_watchdog_timeout_s(void) {
    const char *v = getenv("FOLDNORM_COMM_TIMEOUT");
    if (v == NULL || *v == '\0') {
        return COMM_WATCHDOG_DEFAULT_S;
    }
    char *end;
    double s = strtod(v, &end);
    if (*end != '\0' || !(s >= 0.0 && s <= 1e7)) {
        fatal("FOLDNORM_COMM_TIMEOUT='%s': expected seconds (0 = no deadline)", v);
    }
    return s;
}

static void *watch_loop(void *unused) {
    (void)unused;
    for (;;) {
        sleep(1);
        pthread_mutex_lock(&watch.mu);
        double waited = watch.what != NULL ? now_seconds() - watch.since : 0.0;
        if (waited > watch.timeout_s) {
            // stderr reaches mpirun's terminal; _exit: the main thread is stuck inside MPI
            fprintf(stderr,
                    "error: rank %d on host %s: %s of %zu values has not completed in %.0f s "
                    "(FOLDNORM_COMM_TIMEOUT): a peer rank, its host or the network is gone; "
                    "exiting\n",
                    watch.rank, watch.host, watch.what, watch.count, waited);
            fflush(stderr);
            _exit(EXIT_FAILURE);
        }
        pthread_mutex_unlock(&watch.mu);
    }
    return NULL;
}

void comm_watchdog_start(int rank, const char *host, double timeout_s) {
    if (timeout_s <= 0.0 || watch.started) {
        return;
    }
    pthread_mutex_lock(&watch.mu);
    watch.rank = rank;
    watch.timeout_s = timeout_s;
    snprintf(watch.host, sizeof(watch.host), "%s", host);
    pthread_mutex_unlock(&watch.mu);
    pthread_t thread;
    int rc = pthread_create(&thread, NULL, watch_loop, NULL);
    if (rc != 0) {
        fatal("cannot start the collectives' watchdog thread: %s", strerror(rc));
    }
    pthread_detach(thread);
    watch.started = 1;
}

void comm_watchdog_enter(const char *what, size_t count) {
    if (!watch.started) {
        return;
    }
    pthread_mutex_lock(&watch.mu);
    watch.what = what;
    watch.count = count;
    watch.since = now_seconds();
    pthread_mutex_unlock(&watch.mu);
}

void comm_watchdog_leave(void) {
    if (!watch.started) {
        return;
    }
    pthread_mutex_lock(&watch.mu);
    watch.what = NULL;
    pthread_mutex_unlock(&watch.mu);
}
