// A deadline on collectives across processes: a rank whose collective has
// not completed within the timeout prints which collective, on which rank and
// host, and exits with status 1 (mpirun then ends the job). It is what bounds
// a run whose peer host vanished without closing its sockets (a cut link, a
// powered-off node), where MPI's TCP transport would wait for the kernel's
// retransmission timeout, about 15 minutes, or longer (docs/reliability.md,
// "Across hosts"). One thread that sleeps between checks; it makes no MPI call.
#ifndef FOLDNORM_COMM_WATCHDOG_H
#define FOLDNORM_COMM_WATCHDOG_H

#include <stddef.h>

// The timeout from FOLDNORM_COMM_TIMEOUT (seconds, 0 = off; default
// COMM_WATCHDOG_DEFAULT_S); dies on a value that is not a count.
#define COMM_WATCHDOG_DEFAULT_S 900
double comm_watchdog_timeout_s(void);
// Starts the thread once (timeout_s > 0); rank and host name the messages.
void comm_watchdog_start(int rank, const char *host, double timeout_s);
// Around a collective: what it is ("MPI_Allreduce") and of how many values.
void comm_watchdog_enter(const char *what, size_t count);
void comm_watchdog_leave(void);

#endif
