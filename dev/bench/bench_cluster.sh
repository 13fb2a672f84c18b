#!/usr/bin/env bash
# Data-parallel efficiency across hosts: train_gpt2 (MODEL, B per rank, T)
# on 1 host x 2 ranks (shared memory) against 2 namespace hosts x 1 rank
# (scripts/cluster/netns_cluster.sh; TCP over a veth pair and a bridge)
# with each host's link limited by tc tbf to each RATE and, for each
# LATENCY, h2's link delayed by it each way (bin/link_delay: every packet
# between the hosts crosses h2's link once, so LATENCY is the one-way
# latency and twice it the added round trip; 0 = none), before (-ov 0) and
# after (-ov 1) the overlapped gradient reduction; ROUNDS interleaved
# rounds, the median step time of the steps after the first two of every
# run, and the ratio to the 1-host run with the same -ov. "rest" is the
# step's time outside forward, backward and update: the reduction's wait
# (and zero_grad, the norm's reduction). "ping" is the round trip h1 -> h2
# measured before each run (the median). Not a test: it asserts nothing.
# Needs root (namespaces) and, for a LATENCY other than 0, what
# `netns_cluster.sh check delay` needs. Both "hosts" share this machine's
# cores; PIN=1 pins rank r to core r (taskset) in every run, as a host's
# mpirun would bind its ranks (unpinned, two ranks that wait on each other
# can share one core while other jobs hold the other: each exchange then
# waits for the scheduler, ~4-12 ms here).
#   dev/bench/bench_cluster.sh   (env: MODEL=d6 B=4 T=64 STEPS=6 ROUNDS=2
#                                 RATES="10gbit 1gbit" LATENCIES="0 0.1ms 1ms" Z=1 PIN=0)
set -euo pipefail
cd "$(dirname "$0")/../.."
model=${MODEL:-d6} b=${B:-4} t=${T:-64} steps=${STEPS:-6} rounds=${ROUNDS:-2}
rates=${RATES:-10gbit 1gbit} latencies=${LATENCIES:-0 0.1ms 1ms} z=${Z:-1} pin=${PIN:-0}
train=(bin/train_gpt2)
# shellcheck disable=SC2016 # expanded by the rank's shell
[ "$pin" = 1 ] && train=(sh -c 'exec taskset -c "$OMPI_COMM_WORLD_RANK" "$0" "$@"' bin/train_gpt2)
for lat in $latencies; do
    [ "$lat" = 0 ] && continue
    reason=$(scripts/cluster/netns_cluster.sh check delay) ||
        { echo "bench_cluster: LATENCIES needs link delays, not possible here: $reason" >&2; exit 1; }
    break
done
out=$(mktemp -d)
cluster=$out/cluster
trap 'scripts/cluster/netns_cluster.sh down "$cluster"; rm -rf "$out"' EXIT
scripts/cluster/netns_cluster.sh up "$cluster" 2 > /dev/null
cat llmc/*/*.c llmc/*/*.h > "$out/text.txt"
bin/text_to_shard "$out/text.txt" "$out/src" 0.1 > /dev/null
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(getconf _NPROCESSORS_ONLN) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "model $model, B $b per rank, T $t, -z $z, $steps steps, $rounds rounds, rates $rates, latencies $latencies, pinned $pin, commit $(git rev-parse --short HEAD)"
flags=(-e "$model" -b "$b" -t "$t" -x "$steps" -v 0 -z "$z" -i "$out/src_train_*.bin" -j "$out/src_val_*.bin")
med() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
# the step lines after the first two: total ms and the part outside fwd, bwd, upd
step_ms() { sed -n 's/^step.* | \([0-9.]*\) ms (fwd \([0-9.]*\) bwd \([0-9.]*\) upd \([0-9.]*\)).*/\1 \2 \3 \4/p' "$1" |
            awk 'NR > 2'; }
record() { # NAME LOG: appends the run's median total and rest
    step_ms "$2" | awk '{ print $1 }' | med >> "$out/$1.total"
    step_ms "$2" | awk '{ print $1 - $2 - $3 - $4 }' | med >> "$out/$1.rest"
}
# the median round trip h1 -> h2 in ms
ping_ms() {
    ip netns exec "$(. "$cluster/cluster.env" && echo "$PREFIX")-h1" ping -c 10 -i 0.02 h2 |
        sed -n 's/.* time=\([0-9.]*\) ms$/\1/p' | med
}
for _ in $(seq 1 "$rounds"); do
    for ov in 0 1; do
        "$cluster/mpirun" -np 2 --host h1:2 "${train[@]}" "${flags[@]}" -ov $ov > "$out/run.log"
        record "one_ov$ov" "$out/run.log"
        for rate in $rates; do
            for lat in $latencies; do
                scripts/cluster/netns_cluster.sh link "$cluster" h1 rate "$rate"
                scripts/cluster/netns_cluster.sh link "$cluster" h2 rate "$rate"
                scripts/cluster/netns_cluster.sh link "$cluster" h2 delay "$lat"
                ping_ms >> "$out/ping_${rate}_$lat"
                "$cluster/mpirun" -np 2 --map-by node "${train[@]}" "${flags[@]}" -ov $ov > "$out/run.log"
                record "two_${rate}_${lat}_ov$ov" "$out/run.log"
                scripts/cluster/netns_cluster.sh link "$cluster" h1 unlimited
                scripts/cluster/netns_cluster.sh link "$cluster" h2 unlimited
            done
        done
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| run | -ov | ping ms | step ms (median) | rest ms | vs 1 host x 2 ranks |"
echo "|---|---:|---:|---:|---:|---:|"
for ov in 0 1; do
    one=$(med < "$out/one_ov$ov.total")
    printf '| 1 host x 2 ranks (shared memory) | %s | - | %.0f | %.0f | 1.00 |\n' "$ov" "$one" "$(med < "$out/one_ov$ov.rest")"
    for rate in $rates; do
        for lat in $latencies; do
            two=$(med < "$out/two_${rate}_${lat}_ov$ov.total")
            what="tbf $rate"; [ "$lat" = 0 ] || what="$what, $lat each way"
            printf '| 2 hosts x 1 rank, %s | %s | %.2f | %.0f | %.0f | %.2f |\n' "$what" "$ov" \
                "$(med < "$out/ping_${rate}_$lat")" "$two" "$(med < "$out/two_${rate}_${lat}_ov$ov.rest")" \
                "$(awk -v a="$one" -v b="$two" 'BEGIN { print a / b }')"
        done
    done
done
