// Graceful stop: SIGINT, SIGTERM and SIGUSR1 (which schedulers send before a
// time limit) ask the training loop to finish its step, write a checkpoint and
// exit with 128 + signal; a second signal exits at once (status 128 + signal)
// from the handler, so nothing more is written (checkpoint files are written
// atomically: an unfinished one is a *.tmp that the next start removes).
#ifndef FOLDNORM_STOP_SIGNAL_H
#define FOLDNORM_STOP_SIGNAL_H

// Blocks SIGINT, SIGTERM and SIGUSR1 in this thread (and so in every thread
// it starts later) and starts the one thread that waits for them; also
// installs a handler for threads started before. Call it first in main,
// before any other thread starts. Dies if a call fails.
void stop_signal_install(void);
// The first stop signal received, or 0.
int stop_signal_received(void);
// "SIGINT", "SIGTERM", "SIGUSR1", or "signal".
const char *stop_signal_name(int sig);

#endif
