// For comm*.c built with MPI only: the check every MPI call goes through
// (errors return, MPI_ERRORS_RETURN, and are reported with the call that failed).
#ifndef FOLDNORM_COMM_MPI_H
#define FOLDNORM_COMM_MPI_H

void comm_mpi_check(int rc, const char *call);

#endif
