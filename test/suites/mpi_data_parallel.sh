#!/usr/bin/env bash
# Data parallel on the CPU with MPI (llmc/comm.c): the all-reduce gives the
# exact mean over 1, 2 and 4 ranks (4 oversubscribed on 2 cores).
set -uo pipefail
cd "$(dirname "$0")/../.."
if ! command -v mpirun > /dev/null || ! ./test_comm | grep -q "backend mpi"; then
    echo "FAIL: this build has no MPI (scripts/deps/mpi.txt installs Debian's Open MPI)"
    exit 1
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
fails=0
for np in 1 2 4; do
    if mpirun --oversubscribe -np $np ./test_comm > /tmp/test_comm_$$.out 2>&1; then
        echo "ok   comm allreduce over $np ranks: $(tail -1 /tmp/test_comm_$$.out)"
    else
        echo "FAIL comm allreduce over $np ranks:"; sed 's/^/    /' /tmp/test_comm_$$.out; fails=$((fails + 1))
    fi
done
rm -f /tmp/test_comm_$$.out
echo "$fails failed"
[ $fails -eq 0 ]
