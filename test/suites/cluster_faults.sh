#!/usr/bin/env bash
# Faults across hosts (docs/reliability.md, "Across hosts"): train_gpt2 on a
# cluster of two namespace hosts (scripts/cluster/netns_cluster.sh),
# checkpointing every 5 steps, hit mid-step (after step 12) by
#   1. kill -9 of every process on h2 (its daemon and both its ranks), then
#      on h1 (rank 0's host, where the checkpoints are written);
#   2. h1's link taken down and left down: Open MPI's daemons find
#      the lost host through TCP keepalives (the cluster's mpirun sets them:
#      idle 5 s, 3 probes 2 s apart) and end the job;
#   3. a degraded link (tc tbf at 8 Mbit/s both ways), and a link at 100x
#      latency (10 ms each way, bin/link_delay: the kernel has no tc netem;
#      a SKIP naming why where it cannot be made): the run completes,
#      slower, with the unlimited run's weights bit for bit;
#   4. a link at 32 kbit/s, alive but useless, with FOLDNORM_COMM_TIMEOUT=8:
#      the ranks' own deadline on a collective (llmc/core/comm_watchdog.h)
#      ends them, naming the collective.
# In 1, 2 and 4 every surviving process (mpirun and each process on each
# host) must be gone within 60 s, the output must name the cause (the lost
# host, or the collective), no checkpoint may be half-written (complete
# pairs only; a *.tmp is an interrupted write the next start removes), and
# the run resumed from its newest checkpoint (the link restored) must end
# with the uninterrupted run's main.log s: lines and model, bit for bit. The
# seconds each took are printed. Without namespaces: SKIP (exit 77); on CI
# as root where the kernel allows namespaces, a failure (test/cluster_common.sh).
# sanitized: skip the same C code runs under SAN in mpi_data_parallel/mpi_faults (one host); namespaces x ASan's slower start add minutes
set -uo pipefail
cd "$(dirname "$0")/../.."
. test/cluster_common.sh
work=${1:-$(mktemp -d)}/cluster_faults
rm -rf "$work"; mkdir -p "$work"
cluster_start "$work" 2
export OMP_NUM_THREADS=1 ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
fails=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
make_token_data "$work"
BOUND_S=60

gpt=(-e d2c64h4v256t64 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin" -t 32 -v 0 -l 2e-3
     -c 0.1 -sd 11 -n 5)
placement() { # LAYOUT -> mpirun's placement and the per-rank batch (global batch 4)
    case $1 in
    2x1) echo "-np 2 --map-by node -x OMP_NUM_THREADS -x FOLDNORM_COMM_TIMEOUT bin/train_gpt2 -b 2" ;;
    2x2) echo "-np 4 -x OMP_NUM_THREADS -x FOLDNORM_COMM_TIMEOUT bin/train_gpt2 -b 1" ;;
    esac
}
export FOLDNORM_COMM_TIMEOUT=${FOLDNORM_COMM_TIMEOUT:-900}
# the uninterrupted runs, END steps (constant learning rate: -x does not change
# the steps). A fault lands after step 12, but on a loaded machine the run may
# go on for a while before the injection takes hold (the steps take ~4 ms:
# dead_slow once checkpointed step 35 before its link slowed). No time limit
# on that: where a faulted run checkpointed at or past its layout's end, the
# uninterrupted run is carried on (resumed) past it, and the faulted run
# resumes to that later end (ref_end)
END=80
declare -A ref_end=([2x1]=$END [2x2]=$END)
for layout in 2x1 2x2; do
    # shellcheck disable=SC2046
    "$MPIRUN" $(placement $layout) "${gpt[@]}" -x $END -o "$work/ref_$layout" > "$work/ref_$layout.out" 2>&1 ||
        { fail "uninterrupted $layout run: $(tail -2 "$work/ref_$layout.out" | tr '\n' ' ')"; exit 1; }
done

# start NAME LAYOUT: a long run in the background (run_pid), once it logged step 12
start() {
    # shellcheck disable=SC2046
    "$MPIRUN" $(placement "$2") "${gpt[@]}" -x 100000 -o "$work/$1" > "$work/$1.out" 2>&1 &
    run_pid=$!
    local i
    for i in $(seq 600); do
        grep -q '^step   12/' "$work/$1.out" 2>/dev/null && return 0
        kill -0 $run_pid 2>/dev/null || break
        sleep 0.1
    done
    fail "$1: never reached step 12: $(tail -2 "$work/$1.out" | tr '\n' ' ')"
    return 1
}
# all_gone: mpirun and every process on every host have exited within
# BOUND_S seconds of the fault (t0, ns); sets gone_s; else kills them all
all_gone() {
    local h
    while :; do
        local left=""
        kill -0 $run_pid 2>/dev/null && left="mpirun"
        for h in $HOSTS; do [ -n "$(host_pids "$h")" ] && left="$left $h"; done
        gone_s=$(awk -v ns=$(( $(date +%s%N) - t0 )) 'BEGIN { printf "%.1f", ns / 1e9 }')
        [ -z "$left" ] && { wait $run_pid 2>/dev/null; run_rc=$?; return 0; }
        if awk -v s="$gone_s" -v b=$BOUND_S 'BEGIN { exit !(s > b) }'; then
            fail "still running ${BOUND_S} s after the fault: $left"
            kill -9 $run_pid 2>/dev/null
            for h in $HOSTS; do scripts/cluster/netns_cluster.sh kill "$CLUSTER" "$h"; done
            wait $run_pid 2>/dev/null
            return 1
        fi
        sleep 0.1
    done
}
# intact NAME: complete checkpoint pairs only (a state file has its model
# file); prints the newest step and any *.tmp (an interrupted write)
intact() {
    local d=$work/$1 s newest=-1
    for s in "$d"/state_*.bin; do
        [ -e "$s" ] || continue
        [ -f "${s/state_/model_}" ] || { echo "a state without its model: $s"; return 1; }
        newest=$(basename "$s" .bin); newest=$((10#${newest#state_}))
    done
    [ "$newest" -ge 10 ] || { echo "no checkpoint of step >= 10"; return 1; }
    echo "newest checkpoint step $newest$(ls "$d"/*.tmp > /dev/null 2>&1 && echo ", $(ls "$d"/*.tmp | wc -l) .tmp")"
}
# resumed NAME LAYOUT: resumed to the layout's end equals the uninterrupted
# run; a fault that took hold at or past that end first carries the
# uninterrupted run on to 5 steps past the faulted run's newest checkpoint
resumed() {
    local newest end=${ref_end[$2]}
    newest=$(ls "$work/$1"/state_*.bin 2>/dev/null | sed 's/.*state_0*\([0-9][0-9]*\)\.bin/\1/' | sort -n | tail -1)
    if [ "${newest:-0}" -ge "$end" ]; then
        end=$((newest + 5))
        echo "note $1: the fault took hold after step ${ref_end[$2]} (newest checkpoint $newest): the uninterrupted $2 run carried on to $end"
        # shellcheck disable=SC2046
        "$MPIRUN" $(placement "$2") "${gpt[@]}" -x $end -y 1 -o "$work/ref_$2" > "$work/ref_$2.$end.out" 2>&1 ||
            { fail "uninterrupted $2 run carried on to $end: $(tail -2 "$work/ref_$2.$end.out" | tr '\n' ' ')"; return; }
        ref_end[$2]=$end
    fi
    # shellcheck disable=SC2046
    if "$MPIRUN" $(placement "$2") "${gpt[@]}" -x "$end" -y 1 -o "$work/$1" > "$work/$1.resume.out" 2>&1 &&
        same_run "$work/$1" "$work/ref_$2" "$end"; then
        ok "$1: resumed from $(sed -n 's/^resumed from .* at step \([0-9]*\)$/step \1/p' "$work/$1.resume.out") to $end: the uninterrupted run's main.log s: lines and model"
    else
        fail "$1: the resumed run differs or failed: $(tail -2 "$work/$1.resume.out" | tr '\n' ' ')"
    fi
}
# fault NAME LAYOUT CAUSE_REGEX INJECT...: start, inject, bound, cause, files, resume
fault() {
    local name=$1 layout=$2 cause=$3; shift 3
    start "$name" "$layout" || return
    t0=$(date +%s%N)
    "$@"
    all_gone || return
    local files; files=$(intact "$name") || { fail "$name: checkpoints: $files"; return; }
    if [ "$run_rc" -ne 0 ] && grep -qE "$cause" "$work/$name.out"; then
        ok "$name: every process gone in $gone_s s (bound $BOUND_S), mpirun exit $run_rc, cause named: $(grep -oE "$cause" "$work/$name.out" | head -1); $files"
    else
        fail "$name: exit $run_rc, cause /$cause/ not in: $(grep -v '^step' "$work/$name.out" | tail -6 | tr '\n' ' ')"
    fi
}
# mpirun's report of a lost host: "Remote daemon: [[JOB,0],N] on node HOST"
lost() { echo "Remote daemon: \[\[[0-9]+,0\],[0-9]+\] on node $1"; }

# 1. every process on one host killed
fault kill_h2 2x2 "$(lost h2)" scripts/cluster/netns_cluster.sh kill "$CLUSTER" h2 && resumed kill_h2 2x2
fault kill_h1 2x2 "$(lost h1)" scripts/cluster/netns_cluster.sh kill "$CLUSTER" h1 && resumed kill_h1 2x2

# 2. a link down, left down (restored before the resume): rank 0's host, the
# one that writes the checkpoints (h2's was found the same way and as fast,
# docs/reliability.md; left out for time)
fault link_h1 2x1 "$(lost h1)" scripts/cluster/netns_cluster.sh link "$CLUSTER" h1 down
scripts/cluster/netns_cluster.sh link "$CLUSTER" h1 up && resumed link_h1 2x1

# 3. a degraded link: slower, the same weights
median_ms() { grep -oE '^step +[0-9]+/[0-9]+ \| .* \| [0-9.]+ ms' "$1" | awk '{ print $(NF-1) }' | sort -n |
              awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
scripts/cluster/netns_cluster.sh link "$CLUSTER" h2 rate 8mbit
# shellcheck disable=SC2046
"$MPIRUN" $(placement 2x1) "${gpt[@]}" -x 5 -o "$work/slow" > "$work/slow.out" 2>&1
scripts/cluster/netns_cluster.sh link "$CLUSTER" h2 unlimited
# the unlimited run's step-5 checkpoint is the same 5 steps
if cmp -s "$work/slow/model_00000005.bin" "$work/ref_2x1/model_00000005.bin"; then
    ok "degraded link (tbf 8 Mbit/s both ways): 5 steps complete, median step $(median_ms "$work/slow.out") ms against $(median_ms "$work/ref_2x1.out") ms unlimited, the same weights bit for bit"
else
    fail "degraded link: $(tail -2 "$work/slow.out" | tr '\n' ' ')"
fi

# 3b. a link at 100x latency: 10 ms each way on h2's link (bin/link_delay
# in the switch, netns_cluster.sh; this kernel has no tc netem), a 20 ms
# round trip where the cluster's is ~0.1-0.2 ms. First the delay itself:
# ping's round trip from h1 must exceed the one measured just before without
# the delay by at least the 20 ms held (a floor no load can lower; no upper
# limit: a busy machine wakes the daemon late). Then 5 steps must complete
# within 2 x BOUND_S, slower, with the unlimited run's weights bit for bit
# (the reduction's order does not depend on timing). The ranks' deadline is
# per collective (FOLDNORM_COMM_TIMEOUT, 900 s here and by default): a 20 ms
# round trip adds tens of ms to a collective, so it does not fire; mpirun's
# keepalives (5 s idle) are answered within the 20 ms. Where the delay
# cannot be made (no libnetfilter_queue, iptables or the kernel's NFQUEUE):
# a SKIP naming why (a failure on CI as root, cluster_skip).
ping_ms() { # the average round trip h1 -> h2 in ms, or nothing
    ip netns exec "$PREFIX-h1" ping -c 5 -i 0.05 -q h2 2>&1 |
        sed -n 's|^rtt min/avg/max/mdev = [0-9.]*/\([0-9.]*\)/.*|\1|p'
}
if reason=$(scripts/cluster/netns_cluster.sh check delay); then
    rtt0=
    command -v ping > /dev/null && rtt0=$(ping_ms)
    if scripts/cluster/netns_cluster.sh link "$CLUSTER" h2 delay 10ms; then
        if ! command -v ping > /dev/null; then
            cluster_skip "100x latency's round trip: no ping (iputils-ping, scripts/deps/cluster.txt)"
        else
            rtt=$(ping_ms)
            if [ -n "$rtt" ] && [ -n "$rtt0" ] && awk -v r="$rtt" -v r0="$rtt0" 'BEGIN { exit !(r - r0 >= 20) }'; then
                ok "100x latency: ping h1 -> h2 round trip $rtt ms with 10 ms each way on h2's link, $rtt0 ms just before without"
            else
                fail "100x latency: ping h1 -> h2 round trip '${rtt:-none}' ms, not 20 ms above the '${rtt0:-none}' ms without the delay"
            fi
        fi
        t0=$(date +%s%N)
        # shellcheck disable=SC2046
        timeout $((2 * BOUND_S)) "$MPIRUN" $(placement 2x1) "${gpt[@]}" -x 5 -o "$work/laggy" > "$work/laggy.out" 2>&1
        rc=$?
        took=$(awk -v ns=$(( $(date +%s%N) - t0 )) 'BEGIN { printf "%.1f", ns / 1e9 }')
        scripts/cluster/netns_cluster.sh link "$CLUSTER" h2 delay 0
        if [ $rc -eq 0 ] && cmp -s "$work/laggy/model_00000005.bin" "$work/ref_2x1/model_00000005.bin"; then
            ok "100x latency (10 ms each way on h2's link): 5 steps complete in $took s (bound $((2 * BOUND_S))), median step $(median_ms "$work/laggy.out") ms against $(median_ms "$work/ref_2x1.out") ms, the same weights bit for bit; link_delay: $(grep -o 'late by .* at most' "$CLUSTER/delay_h2.log")"
        else
            fail "100x latency: exit $rc after $took s: $(tail -2 "$work/laggy.out" | tr '\n' ' ')"
        fi
    else
        fail "100x latency: the delay could not be set on h2's link"
    fi
else
    cluster_skip "100x latency: $reason"
fi

# 4. a link alive but useless: the collectives' deadline
export FOLDNORM_COMM_TIMEOUT=8
fault dead_slow 2x1 "rank [0-9] on host h[12]: [A-Za-z_]+ .* has not completed in [0-9]+ s" scripts/cluster/netns_cluster.sh link "$CLUSTER" h2 rate 32kbit
scripts/cluster/netns_cluster.sh link "$CLUSTER" h2 unlimited
export FOLDNORM_COMM_TIMEOUT=900
[ -d "$work/dead_slow" ] && resumed dead_slow 2x1
echo "$fails failed"
suite_exit $((fails + cluster_skip_failed))
