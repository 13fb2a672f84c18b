#include "stop_signal.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "utils.h"

// The one piece of global state a handler may touch (C11 7.14.1.1).
static volatile sig_atomic_t first_stop_signal = 0;

static void on_stop_signal(int sig) {
    if (first_stop_signal != 0) {
        // async-signal-safe only: write(2) and _exit(2)
        static const char msg[] = "\nsecond stop signal: exiting now, writing nothing more\n";
        ssize_t written = write(STDERR_FILENO, msg, sizeof(msg) - 1);
        (void)written;
        _exit(128 + sig);
    }
    first_stop_signal = sig;
}

void stop_signal_install(void) {
    static const int signals[] = {SIGINT, SIGTERM, SIGUSR1};
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = on_stop_signal;
    action.sa_flags = SA_RESTART; // reads and writes in flight carry on
    if (sigemptyset(&action.sa_mask) != 0) {
        fatal("sigemptyset failed: %s", strerror(errno));
    }
    for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
        if (sigaction(signals[i], &action, NULL) != 0) {
            fatal("sigaction(%s) failed: %s", stop_signal_name(signals[i]), strerror(errno));
        }
    }
}

int stop_signal_received(void) {
    return first_stop_signal;
}

const char *stop_signal_name(int sig) {
    switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    default: return "signal";
    }
}
