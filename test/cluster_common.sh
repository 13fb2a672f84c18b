#!/usr/bin/env bash
# Sourced by the cluster suites (test/suites/cluster_*.sh): a namespace
# cluster for the suite's lifetime (scripts/cluster/netns_cluster.sh), the
# token data they train on and the checks they share. Where namespaces
# cannot be made (not root, no iproute2) the suite prints SKIP with the
# reason and exits 77 (test/suite_outcome.sh); on CI as root where the kernel
# allows namespaces, every skip is a failure instead (cluster_skip).
. test/suite_outcome.sh

# cluster_must_run: true on CI (CI=true) as root where a network namespace
# can be added: there nothing may skip (a missing program is CI's fault)
cluster_must_run() {
    [ "${CI:-}" = true ] && [ "$(id -u)" = 0 ] && scripts/cluster/netns_cluster.sh check netns > /dev/null
}
# cluster_skip REASON: a SKIP of a part (or, before cluster_start, of the
# suite), or a failure where cluster_must_run; sets cluster_skip_failed
cluster_skip() {
    if cluster_must_run; then
        echo "FAIL on CI as root with namespaces this must run, but: $*"
        cluster_skip_failed=1
    else
        skip_part "$*"
    fi
}
cluster_skip_failed=0

# cluster_start WORK HOSTS: sets CLUSTER (the cluster's folder) and MPIRUN,
# removes the cluster when the suite exits; SKIPs (exit 77) where impossible
cluster_start() {
    local reason
    if ! reason=$(scripts/cluster/netns_cluster.sh check); then
        cluster_skip "no namespace cluster here: $reason"
        suite_exit "$cluster_skip_failed"
    fi
    if ! bin/test_comm | grep -q "backend mpi"; then
        echo "FAIL: this build has no MPI (scripts/deps/mpi.txt installs Debian's Open MPI)"
        exit 1
    fi
    CLUSTER=$1/cluster
    MPIRUN=$CLUSTER/mpirun
    trap 'scripts/cluster/netns_cluster.sh down "$CLUSTER"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    scripts/cluster/netns_cluster.sh up "$CLUSTER" "$2" || { echo "FAIL: cluster up"; exit 1; }
    # shellcheck source=/dev/null
    . "$CLUSTER/cluster.env" # PREFIX, HOSTS
}

# token shards of this repository's C sources in WORK/src_{train,val}_*.bin
make_token_data() {
    cat llmc/*/*.c llmc/*/*.h > "$1/text.txt"
    bin/text_to_shard "$1/text.txt" "$1/src" 0.1 > /dev/null || { echo "FAIL: text_to_shard"; exit 1; }
}

# max_loss_diff A B STEPS: the largest |trl difference| over the train steps
# of two run folders' main.log, or "missing" unless both have STEPS of them
max_loss_diff() {
    paste <(grep -oE '^s:[0-9]+ trl:[0-9.]+' "$1/main.log" | cut -d: -f3) \
          <(grep -oE '^s:[0-9]+ trl:[0-9.]+' "$2/main.log" | cut -d: -f3) |
        awk -v want="$3" '{ d = $1 - $2; if (d < 0) d = -d; if (!(d <= m)) m = d; n++ }
                          END { if (n != want) print "missing"; else printf "%.2g", m }'
}

# same_run A B STEP: the same main.log s: lines and model_STEP.bin, bit for bit
same_run() {
    diff <(grep '^s:' "$1/main.log") <(grep '^s:' "$2/main.log") > /dev/null &&
        cmp -s "$1/model_$(printf %08d "$3").bin" "$2/model_$(printf %08d "$3").bin"
}

# host_pids HOST: the processes running on HOST (its namespace)
host_pids() {
    ip netns pids "$PREFIX-$1" 2>/dev/null
}
