#!/usr/bin/env bash
# A test cluster on one machine: 2-3 "hosts" that are Linux network
# namespaces joined by veth pairs to a bridge (in a switch namespace of its
# own), a login namespace where mpirun runs, a hostfile and an Open MPI
# launcher agent (plm_rsh_agent) that starts orted in a host's namespace the
# way ssh would on a real cluster. Nothing is added to the machine's own
# network namespace. Needs root and iproute2 (`check` says why not).
#
#   netns_cluster.sh check                 exit 0 if a cluster can be made here, else
#                                          print the reason and exit 2 (suites SKIP)
#   netns_cluster.sh check delay           the same for `link ... delay`
#   netns_cluster.sh check netns           exit 0 if root can add a network namespace
#                                          here (the kernel allows it), else exit 2
#   netns_cluster.sh up DIR [HOSTS]        make HOSTS hosts (2 or 3; default 2) h1..hN;
#                                          DIR gets hostfile, agent, mpirun, env
#   netns_cluster.sh down DIR              remove everything `up DIR` made (idempotent)
#   netns_cluster.sh run DIR HOSTS CMD...  up, CMD with CLUSTER=DIR in its environment,
#                                          then down, also when CMD fails or on a signal
#   netns_cluster.sh link DIR HOST down|up|rate RATE|delay TIME|unlimited
#                                          take HOST's link down or up, limit it (tc
#                                          tbf, both directions; RATE as tc: 1gbit),
#                                          delay it (TIME each way: 0.2ms, 10ms; 0
#                                          removes it; bin/link_delay, below) or
#                                          remove both its limit and its delay
#   netns_cluster.sh kill DIR HOST         kill -9 every process on HOST (orted and ranks)
#   netns_cluster.sh exec DIR HOST CMD...  run CMD on HOST (its namespace, hostname, storage)
#
# DIR/mpirun ARGS... runs mpirun in the login namespace with the hostfile, the
# agent and the transport settings (TCP between hosts on the cluster network
# only, shared memory within a host, keepalives: docs/reliability.md,
# "Across hosts"). Each host sees its own DIR/hosts/hN at DIR/local (a bind
# mount in its mount namespace): host-local storage; the rest of the file
# system is shared by all hosts, as an NFS home would be.
#
# A link's delay: this kernel has no tc netem, so iptables NFQUEUE rules in
# the switch's namespace, on HOST's port of the bridge (what HOST sends and
# what it receives), hand every packet to bin/link_delay
# (scripts/cluster/link_delay.c), which holds each TIME and accepts it,
# first in first out. In the switch, not on HOST: a packet held on its
# sender (HOST's OUTPUT) still counts against TCP's small-queue limit of
# about 1 ms of data, which at 10 ms held 300 MB to 4 Mbit/s; past the veth
# it belongs to no socket. `kill DIR HOST` leaves the link as it was; the
# rules pass packets straight through if the daemon is gone
# (--queue-bypass). Rate limits stay with tc tbf.
set -uo pipefail

SUBNET=10.97.0            # inside the namespaces only: it cannot clash with the machine's
LOGIN_ADDR=$SUBNET.254
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LINK_DELAY=$ROOT/bin/link_delay

die() { echo "netns_cluster: $*" >&2; exit 1; }

# why a cluster cannot be made here (nothing printed: it can)
check_reason() {
    [ "$(id -u)" = 0 ] || { echo "namespaces need root (uid $(id -u))"; return; }
    command -v ip > /dev/null || { echo "no 'ip' (iproute2)"; return; }
    command -v unshare > /dev/null || { echo "no 'unshare' (util-linux)"; return; }
    command -v mpirun > /dev/null && command -v orted > /dev/null ||
        { echo "no mpirun/orted (Open MPI)"; return; }
    local probe=fnprobe$$ err
    if ! err=$(ip netns add $probe 2>&1); then echo "ip netns add failed: $err"; return; fi
    if ! err=$(ip -n $probe link add eth0 type veth peer name p0 2>&1); then
        ip netns del $probe 2>/dev/null; echo "veth pairs cannot be made: $err"; return
    fi
    if ! err=$(ip netns exec $probe unshare --uts true 2>&1); then
        ip netns del $probe 2>/dev/null; echo "unshare --uts failed in a namespace: $err"; return
    fi
    if ! err=$(ip netns exec $probe sysctl -qw net.ipv4.tcp_retries2=5 2>&1); then
        ip netns del $probe 2>/dev/null; echo "a namespace's net.ipv4.tcp_retries2 cannot be set: $err"; return
    fi
    ip netns del $probe
}

# why no network namespace can be added here (nothing printed: it can); the
# rest of check_reason is programs that a machine can install
netns_reason() {
    [ "$(id -u)" = 0 ] || { echo "namespaces need root (uid $(id -u))"; return; }
    command -v ip > /dev/null || { echo "no 'ip' (iproute2)"; return; }
    local probe=fnprobe$$ err
    if ! err=$(ip netns add $probe 2>&1); then echo "ip netns add failed: $err"; return; fi
    ip netns del $probe
}

# why `link ... delay` cannot work here (nothing printed: it can)
delay_reason() {
    local reason; reason=$(check_reason)
    [ -z "$reason" ] || { echo "$reason"; return; }
    [ -x "$LINK_DELAY" ] || { echo "no $LINK_DELAY: make builds it where libnetfilter_queue is installed (libnetfilter-queue-dev, scripts/deps/cluster.txt)"; return; }
    command -v iptables > /dev/null || { echo "no iptables (scripts/deps/cluster.txt)"; return; }
    local probe=fnprobe$$ err
    if ! err=$(ip netns add $probe 2>&1); then echo "ip netns add failed: $err"; return; fi
    if ! err=$(ip netns exec $probe sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>&1); then
        ip netns del $probe 2>/dev/null; echo "bridged packets cannot be sent through iptables (the kernel's br_netfilter): ${err//$'\n'/ }"; return
    fi
    if ! err=$(ip netns exec $probe iptables -w -t mangle -A FORWARD -m physdev --physdev-in p0 -j NFQUEUE --queue-num 1 --queue-bypass 2>&1); then
        ip netns del $probe 2>/dev/null; echo "no iptables NFQUEUE rule on a bridge port here (the kernel's xt NFQUEUE target, physdev match): ${err//$'\n'/ }"; return
    fi
    local log; log=$(mktemp)
    ip netns exec $probe "$LINK_DELAY" 1 1ms < /dev/null > "$log" 2>&1 &
    local pid=$! i
    for i in $(seq 100); do
        grep -q bound "$log" && break
        alive $pid || break
        sleep 0.05
    done
    kill $pid 2>/dev/null; wait $pid 2>/dev/null
    grep -q bound "$log" || echo "link_delay cannot bind a queue (the kernel's nfnetlink_queue?): $(tr '\n' ' ' < "$log")"
    rm -f "$log"
    ip netns del $probe
}

load() { # DIR: the names `up` recorded
    [ -f "$1/cluster.env" ] || die "$1 holds no cluster (no $1/cluster.env)"
    # shellcheck source=/dev/null
    . "$1/cluster.env"
}

ns_of() { # HOST -> its namespace (dies for a host not in this cluster)
    local h
    for h in $HOSTS; do [ "$h" = "$1" ] && { echo "$PREFIX-$1"; return; }; done
    die "no host '$1' in this cluster (hosts: $HOSTS)"
}

down() {
    local dir=$1
    [ -f "$dir/cluster.env" ] || return 0
    load "$dir"
    local ns pid
    for ns in $(ip netns list | awk '{ print $1 }' | grep "^$PREFIX-"); do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
        ip netns del "$ns" 2>/dev/null
    done
    rm -rf /etc/netns/"$PREFIX"-*
    rm -f "$dir/cluster.env" "$dir"/delay_*.pid
}

up() {
    local dir=$1 n=${2:-2}
    [[ $n =~ ^[23]$ ]] || die "up: 2 or 3 hosts, not '$n'"
    local reason; reason=$(check_reason)
    [ -z "$reason" ] || die "cannot make a cluster here: $reason"
    [ ! -f "$dir/cluster.env" ] || die "$dir already holds a cluster: netns_cluster.sh down $dir"
    mkdir -p "$dir" || die "cannot make $dir"
    dir=$(cd "$dir" && pwd)
    local prefix hosts="" i
    prefix=fn$(printf '%04x' $(( ($$ + RANDOM) & 0xffff )))
    for i in $(seq 1 "$n"); do hosts="$hosts h$i"; done
    hosts=${hosts# }
    printf 'PREFIX=%s\nHOSTS="%s"\nDIR=%s\nSUBNET=%s\n' "$prefix" "$hosts" "$dir" "$SUBNET" > "$dir/cluster.env"
    load "$dir"
    trap 'down "$dir"; exit 1' ERR
    set -e
    ip netns add "$PREFIX-sw"
    ip -n "$PREFIX-sw" link add br0 type bridge
    ip -n "$PREFIX-sw" link set br0 up
    local names="login $HOSTS" addr name ns
    # /etc/netns/NS/hosts is bind-mounted over /etc/hosts by `ip netns exec`
    local hosts_file="127.0.0.1 localhost"$'\n'"$LOGIN_ADDR login"
    for i in $(seq 1 "$n"); do hosts_file="$hosts_file"$'\n'"$SUBNET.$i h$i"; done
    for name in $names; do
        ns=$PREFIX-$name
        addr=$LOGIN_ADDR; [ "$name" = login ] || addr=$SUBNET.${name#h}
        ip netns add "$ns"
        ip link add eth0 netns "$ns" type veth peer name "$name" netns "$PREFIX-sw"
        ip -n "$PREFIX-sw" link set "$name" master br0 up
        ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
        # a TCP connection whose sent data stays unacknowledged gives up after
        # ~13 s (5 retransmissions from the 200 ms minimum timeout, doubling:
        # 0.2 x (2^6 - 1) s), not the ~15 min of the default 15; keepalives
        # (the mpirun wrapper) find a dead peer of an idle connection only
        ip netns exec "$ns" sysctl -qw net.ipv4.tcp_retries2=5
        ip -n "$ns" addr add "$addr/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" link set lo up
        mkdir -p "/etc/netns/$ns"
        printf '%s\n' "$hosts_file" > "/etc/netns/$ns/hosts"
        [ "$name" = login ] || mkdir -p "$DIR/hosts/$name"
    done
    mkdir -p "$DIR/local"
    for name in $HOSTS; do echo "$name slots=2"; done > "$DIR/hostfile"
    write_agent
    write_mpirun
    set +e
    trap - ERR
    wait_reachable
    echo "cluster $PREFIX: hosts $HOSTS on $SUBNET.0/24, mpirun from the login namespace; $DIR/mpirun"
}

# every host answers on the cluster network (bash's /dev/tcp: a refused port is an answer)
wait_reachable() {
    local h i
    for h in $HOSTS; do
        for i in $(seq 50); do
            [[ $(ip netns exec "$PREFIX-login" timeout 1 bash -c "exec 3<>/dev/tcp/$h/9" 2>&1) == *refused* ]] &&
                continue 2
            sleep 0.1
        done
        down "$DIR"; die "host $h does not answer on the cluster network"
    done
}

# plm_rsh_agent: mpirun runs `agent HOST COMMAND...` as it would run ssh; the
# command (orted and its arguments, a shell line) runs in HOST's namespace
# with HOST as its hostname and HOST's own folder mounted at DIR/local
write_agent() {
    fill > "$DIR/agent" <<'AGENT'
#!/bin/sh
# Open MPI launcher agent of the cluster in @DIR@ (scripts/cluster/netns_cluster.sh)
host=$1; shift
case " @HOSTS@ " in *" $host "*) ;; *) echo "agent: no host '$host' in this cluster" >&2; exit 255 ;; esac
exec ip netns exec "@PREFIX@-$host" unshare --uts -- /bin/sh -c \
    'hostname "$1" && mount --bind "$2" "$3" && shift 3 && exec /bin/sh -c "$*"' \
    agent "$host" "@DIR@/hosts/$host" "@DIR@/local" "$@"
AGENT
    chmod +x "$DIR/agent"
}

# The transport settings a real cluster would put in openmpi-mca-params.conf:
# the daemons' connections send TCP keepalives after 5 s idle, every 2 s, and
# give up after 3 unanswered (a host whose link is down is found in ~11 s, not
# the 300 + 9 x 20 s of the defaults); docs/reliability.md, "Across hosts"
write_mpirun() {
    fill > "$DIR/mpirun" <<'MPIRUN'
#!/bin/sh
# mpirun on the cluster in @DIR@ (scripts/cluster/netns_cluster.sh): from the
# login namespace (hostname login), the hosts' daemons started by the agent,
# TCP between hosts on the cluster network only (shared memory within a
# host), dead links found by TCP keepalives on the daemons' connections; no
# binding to cores: every host's daemon would bind its first rank to core 0
# of the one machine they all share
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# as environment, so a caller's OMPI_MCA_oob_tcp_keepalive_time=0 (off) wins
export OMPI_MCA_oob_tcp_keepalive_time=${OMPI_MCA_oob_tcp_keepalive_time:-5}
export OMPI_MCA_oob_tcp_keepalive_intvl=${OMPI_MCA_oob_tcp_keepalive_intvl:-2}
export OMPI_MCA_oob_tcp_keepalive_probes=${OMPI_MCA_oob_tcp_keepalive_probes:-3}
exec ip netns exec "@PREFIX@-login" unshare --uts -- /bin/sh -c 'hostname login && exec "$@"' mpirun \
    mpirun --hostfile "@DIR@/hostfile" \
    --mca plm_rsh_agent "@DIR@/agent" --mca plm_rsh_no_tree_spawn 1 \
    --mca btl self,vader,tcp --mca btl_tcp_if_include @SUBNET@.0/24 \
    --mca oob_tcp_if_include @SUBNET@.0/24 \
    --bind-to none --oversubscribe "$@"
MPIRUN
    chmod +x "$DIR/mpirun"
}

# stdin with this cluster's names in place of @DIR@, @PREFIX@, @HOSTS@, @SUBNET@
fill() {
    sed -e "s|@DIR@|$DIR|g" -e "s|@PREFIX@|$PREFIX|g" -e "s|@HOSTS@|$HOSTS|g" -e "s|@SUBNET@|$SUBNET|g"
}

# the NFQUEUE rules of HOST's delay in the switch's namespace (bridged
# packets pass its iptables: br_netfilter): what HOST sends, by the port it
# comes in on (mangle FORWARD), and what it receives, by the port it leaves
# on (filter FORWARD); two tables, so a packet between two delayed hosts
# is held by both. ACTION -A or -D; queue N for host hN.
delay_rules() { # HOST ACTION
    local q=${1#h}
    ip netns exec "$PREFIX-sw" iptables -w -t mangle "$2" FORWARD -m physdev --physdev-in "$1" \
        -j NFQUEUE --queue-num "$q" --queue-bypass &&
        ip netns exec "$PREFIX-sw" iptables -w -t filter "$2" FORWARD -m physdev --physdev-out "$1" \
            -j NFQUEUE --queue-num "$q" --queue-bypass
}

# alive PID: PID has not exited (an exited process stays a zombie until the
# machine's init reaps it, which can take seconds here)
alive() {
    local stat
    read -r stat 2>/dev/null < "/proc/$1/stat" || return 1
    [[ $stat =~ \)\ ([A-Za-z]) ]] && [ "${BASH_REMATCH[1]}" != Z ]
}
# running PID: PID is a live link_delay (not another process that got its number)
running() {
    alive "$1" && grep -qa link_delay "/proc/$1/cmdline" 2>/dev/null
}

delay_off() { # HOST: removes HOST's delay (rules first, then the daemon releases what it holds)
    local pidfile=$DIR/delay_$1.pid pid i
    [ -f "$pidfile" ] || return 0
    delay_rules "$1" -D 2>/dev/null
    pid=$(cat "$pidfile")
    running "$pid" && kill -TERM "$pid"
    for i in $(seq 50); do running "$pid" || break; sleep 0.05; done
    running "$pid" && { kill -9 "$pid"; echo "netns_cluster: link_delay of $1 (pid $pid) ignored SIGTERM; killed" >&2; }
    rm -f "$pidfile"
}

delay_on() { # HOST TIME
    local log=$DIR/delay_$1.log pid i reason
    reason=$(delay_reason)
    [ -z "$reason" ] || die "link: no delay here: $reason"
    delay_off "$1"
    ip netns exec "$PREFIX-sw" sysctl -qw net.bridge.bridge-nf-call-iptables=1 || die "link: br_netfilter off in the switch"
    # the previous daemon's log says "bound" too: gone before the new one starts
    rm -f "$log"
    ip netns exec "$PREFIX-sw" "$LINK_DELAY" "${1#h}" "$2" < /dev/null > "$log" 2>&1 &
    pid=$!
    echo "$pid" > "$DIR/delay_$1.pid"
    for i in $(seq 100); do
        grep -q bound "$log" 2>/dev/null && break
        alive "$pid" || break
        sleep 0.05
    done
    grep -q bound "$log" 2>/dev/null || {
        local state=exited; alive "$pid" && state="still starting after $i checks"
        delay_off "$1"; die "link: link_delay did not start for $1 ($state): $(tr '\n' ' ' < "$log")"
    }
    delay_rules "$1" -A || { delay_off "$1"; die "link: cannot add the NFQUEUE rules for $1"; }
}

link() { # DIR HOST ACTION [RATE|TIME]
    load "$1"
    local ns; ns=$(ns_of "$2")
    case ${3:-} in
    down|up) ip -n "$ns" link set eth0 "$3" ;;
    rate)
        [ -n "${4:-}" ] || die "link: rate needs a rate (tc's units: 1gbit, 10gbit, 2mbit)"
        # tbf on both ends of the host's veth: its sends and what it receives
        ip netns exec "$ns" tc qdisc replace dev eth0 root tbf rate "$4" burst 1mb latency 100ms &&
            ip netns exec "$PREFIX-sw" tc qdisc replace dev "$2" root tbf rate "$4" burst 1mb latency 100ms ;;
    delay)
        [ -n "${4:-}" ] || die "link: delay needs a time (0.2ms, 200us, 10ms; 0 removes the delay)"
        if [[ ${4:-} =~ ^0+(\.0*)?(us|ms|s)?$ ]]; then delay_off "$2"; else delay_on "$2" "$4"; fi ;;
    unlimited)
        delay_off "$2"
        ip netns exec "$ns" tc qdisc del dev eth0 root 2>/dev/null
        ip netns exec "$PREFIX-sw" tc qdisc del dev "$2" root 2>/dev/null; true ;;
    *) die "link: down, up, rate RATE, delay TIME or unlimited, not '${3:-}'" ;;
    esac
}

cmd=${1:-}
shift || true
case $cmd in
check)
    case ${1:-} in
    "") reason=$(check_reason) ;;
    delay) reason=$(delay_reason) ;;
    netns) reason=$(netns_reason) ;;
    *) die "check [delay|netns], not 'check $1'" ;;
    esac
    [ -z "$reason" ] || { echo "$reason"; exit 2; } ;;
up) [ $# -ge 1 ] || die "up DIR [HOSTS]"; up "$@" ;;
down) [ $# -eq 1 ] || die "down DIR"; down "$1" ;;
run)
    [ $# -ge 3 ] || die "run DIR HOSTS CMD..."
    dir=$1 n=$2; shift 2
    up "$dir" "$n" > /dev/null || exit 1
    trap 'down "$dir"' EXIT
    trap 'exit 130' INT; trap 'exit 143' TERM
    CLUSTER=$(cd "$dir" && pwd) "$@"
    ;;
link) [ $# -ge 3 ] || die "link DIR HOST down|up|rate RATE|delay TIME|unlimited"; link "$@" ;;
kill)
    [ $# -eq 2 ] || die "kill DIR HOST"
    load "$1"; ns=$(ns_of "$2")
    for pid in $(ip netns pids "$ns"); do kill -9 "$pid" 2>/dev/null; done ;;
exec)
    [ $# -ge 3 ] || die "exec DIR HOST CMD..."
    load "$1"; ns=$(ns_of "$2"); host=$2; shift 2
    exec ip netns exec "$ns" unshare --uts -- /bin/sh -c \
        'hostname "$1" && mount --bind "$2" "$3" && shift 3 && exec "$@"' \
        exec "$host" "$DIR/hosts/$host" "$DIR/local" "$@" ;;
*) awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0" | sed 's/^# \{0,1\}//'; [ -z "$cmd" ] || [ "$cmd" = -h ] || exit 2 ;;
esac
