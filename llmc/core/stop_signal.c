#include "stop_signal.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "atomic_write.h"
#include "utils.h"

// Why a thread of its own: a stop signal that interrupts a thread inside
// oneDNN's JIT matmul kernels corrupted the heap in ~15 % of runs (glibc:
// "corrupted size vs. prev_size while consolidating", in the step after the
// signal; never without one). So the stop signals are blocked in the thread
// that installs them, and in every thread it starts later (OpenMP's,
// OpenBLAS's, oneDNN's and the emulator's inherit the mask), and one thread
// waits for them with sigwait(): no compute thread is ever interrupted. The
// handler stays installed for threads started before (MPI's), where a signal
// may still land; it does what the waiting thread does.

static atomic_int first_stop_signal; // lock-free, so a handler may touch it

// The first stop signal sets the flag; a second exits at once.
// Async-signal-safe only: atomics, write(2), unlink(2) and _exit(2). The
// checkpoint being written is not completed; its temporary file is removed.
static void on_stop_signal(int sig) {
    int none = 0;
    if (!atomic_compare_exchange_strong(&first_stop_signal, &none, sig)) {
        static const char msg[] = "\nsecond stop signal: exiting now, writing nothing more\n";
        ssize_t written = write(STDERR_FILENO, msg, sizeof(msg) - 1);
        (void)written;
        atomic_write_remove_in_flight();
        _exit(128 + sig);
    }
}

static const int STOP_SIGNALS[] = {SIGINT, SIGTERM, SIGUSR1};
enum { NUM_STOP_SIGNALS = sizeof(STOP_SIGNALS) / sizeof(STOP_SIGNALS[0]) };

static void stop_signal_set(sigset_t *set) {
    if (sigemptyset(set) != 0) {
        fatal("sigemptyset failed: %s", strerror(errno));
    }
    for (int i = 0; i < NUM_STOP_SIGNALS; i++) {
        if (sigaddset(set, STOP_SIGNALS[i]) != 0) {
            fatal("sigaddset(%s) failed: %s", stop_signal_name(STOP_SIGNALS[i]), strerror(errno));
        }
    }
}

static void *wait_for_stop_signals(void *unused) {
    (void)unused;
    sigset_t set;
    stop_signal_set(&set);
    for (;;) {
        int sig = 0;
        const int rc = sigwait(&set, &sig);
        if (rc != 0) {
            fatal("sigwait failed: %s", strerror(rc));
        }
        on_stop_signal(sig);
    }
    return NULL;
}

void stop_signal_install(void) {
    static int installed;
    if (installed) {
        return;
    }
    installed = 1;
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = on_stop_signal;
    action.sa_flags = SA_RESTART; // reads and writes in flight carry on
    if (sigemptyset(&action.sa_mask) != 0) {
        fatal("sigemptyset failed: %s", strerror(errno));
    }
    for (int i = 0; i < NUM_STOP_SIGNALS; i++) {
        if (sigaction(STOP_SIGNALS[i], &action, NULL) != 0) {
            fatal("sigaction(%s) failed: %s", stop_signal_name(STOP_SIGNALS[i]), strerror(errno));
        }
    }
    sigset_t set;
    stop_signal_set(&set);
    int rc = pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (rc != 0) {
        fatal("pthread_sigmask failed: %s", strerror(rc));
    }
    pthread_t waiter;
    rc = pthread_create(&waiter, NULL, wait_for_stop_signals, NULL);
    if (rc != 0) {
        fatal("pthread_create (the stop-signal thread) failed: %s", strerror(rc));
    }
    rc = pthread_detach(waiter);
    if (rc != 0) {
        fatal("pthread_detach (the stop-signal thread) failed: %s", strerror(rc));
    }
}

int stop_signal_received(void) {
    return atomic_load(&first_stop_signal);
}

const char *stop_signal_name(int sig) {
    switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    default: return "signal";
    }
}
