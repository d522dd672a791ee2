#!/usr/bin/env bash
# A virtual cluster on one machine, for the cross-node tests. Each node is a
# network, UTS and mount namespace held by an anchor process, with its own
# hostname (so tcomms' node id differs), /dev/shm, /sys (its own interfaces)
# and /etc/hosts naming every node. Nodes are joined by one bridge per rail;
# addresses come only from 198.18.0.0/15 (reserved for network tests): rail 0
# is 198.18.ID.0/24, rail 1 198.19.ID.0/24; nothing is addressed in the root
# namespace. Needs root.
#
#   vcluster.sh up DIR [--nodes N] [--rails 1|2] [--rate RATE]
#                                   bring N (3) nodes up; DIR holds the state
#   vcluster.sh run DIR NODE CMD... run CMD on NODE (index or hostname), in the
#                                   current directory; CMD replaces this script's
#                                   process (same pid: signals reach CMD)
#   vcluster.sh hosts DIR           the hostnames, one per line
#   vcluster.sh addr DIR NODE [RAIL]  NODE's address on RAIL (0)
#   vcluster.sh shape DIR NODE RATE|off [RAIL]  limit NODE's link both ways
#                                   (tbf; RATE as tc takes it: 1gbit, 500mbit)
#   vcluster.sh cut DIR NODE [RAIL]   take NODE's link(s) down: silent, like a
#                                   crashed machine (sockets stay open)
#   vcluster.sh restore DIR NODE [RAIL]
#   vcluster.sh kill DIR NODE       kill every process on NODE but its anchor
#   vcluster.sh down DIR            tear everything down (idempotent)
#   vcluster.sh check-clean DIR     exit 1, saying what, if anything is left
#
# Several clusters may run at once (each takes the lowest free ID); callers
# should `trap 'vcluster.sh down DIR' EXIT` so a failing test leaves nothing.
set -euo pipefail

die() {
    echo "vcluster: $*" >&2
    exit 1
}

[[ $# -ge 2 ]] || die "usage: vcluster.sh up|run|hosts|addr|shape|cut|restore|kill|down|check-clean DIR ..."
cmd=$1
dir=$2
shift 2

# State (DIR/state): ID, NODES, RAILS, and per node its anchor's pid and
# network-namespace inode.
load() {
    [[ -f $dir/state ]] || die "$dir: no cluster here (run 'up' first)"
    # shellcheck disable=SC1091
    source "$dir/state"
}

node_index() {
    local n=$1 k
    if [[ $n =~ ^[0-9]+$ ]]; then
        ((n < NODES)) || die "node $n: the cluster has nodes 0..$((NODES - 1))"
        echo "$n"
        return
    fi
    for ((k = 0; k < NODES; k++)); do
        [[ $n == "tcn$k" ]] && echo "$k" && return
    done
    die "node '$n': not a node of this cluster (tcn0..tcn$((NODES - 1)))"
}

anchor_of() {
    local v="ANCHOR_$1"
    echo "${!v}"
}

in_node() {
    local k=$1
    shift
    nsenter -t "$(anchor_of "$k")" --net --uts --mount --wd="$PWD" "$@"
}

own_netns() { readlink /proc/$$/ns/net; }

# Refuses a node recorded in this shell's own namespace: killing "its"
# processes would kill the machine's.
guard_netns() {
    local v="NETNS_$1"
    [[ ${!v} != "$(own_netns)" ]] || die "node $1 is recorded in this shell's network namespace (${!v}): refusing to treat the machine's processes as the node's"
}

# Every pid whose network namespace is node k's (the anchor included). One
# find, not a readlink per process: on a busy machine that took seconds, and
# `kill` (a whole node dying at once) must be quick.
node_pids() {
    local v="NETNS_$1" pat
    guard_netns "$1"
    pat=${!v//[/\\[}
    pat=${pat//]/\\]}
    find /proc/[0-9]*/ns/net -maxdepth 0 -lname "$pat" 2>/dev/null | cut -d/ -f3
}

veth() { echo "tcv${ID}n$1r$2"; }
bridge() { echo "tcvb${ID}r$1"; }
address() { echo "198.$((18 + $2)).$ID.$(($1 + 1))"; }

rails_of() {
    local rail=${1:-}
    if [[ -n $rail ]]; then
        ((rail < RAILS)) || die "rail $rail: the cluster has rails 0..$((RAILS - 1))"
        echo "$rail"
    else
        seq 0 $((RAILS - 1))
    fi
}

# tbf on both ends of node k's link on one rail: the node's egress and the
# bridge port's (the node's ingress). Burst: 10 ms at the rate, at least 256 KiB
# (GSO sends 64 KiB segments).
shape_link() {
    local k=$1 r=$2 rate=$3 v
    v=$(veth "$k" "$r")
    if [[ $rate == off ]]; then
        tc qdisc del dev "$v" root 2>/dev/null || true
        in_node "$k" tc qdisc del dev "eth$r" root 2>/dev/null || true
        return
    fi
    local bps
    bps=$(python3 - "$rate" <<'PY'
import re, sys
m = re.fullmatch(r"(\d+(?:\.\d+)?)([kmg]?)(bit|bps)", sys.argv[1].lower())
if not m:
    sys.exit("bad rate " + sys.argv[1])
n = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]
print(int(n if m.group(3) == "bit" else n * 8))
PY
    ) || die "rate '$rate': give it as tc does (1gbit, 500mbit)"
    local burst=$((bps / 8 / 100))
    ((burst >= 262144)) || burst=262144
    tc qdisc replace dev "$v" root tbf rate "$rate" burst "$burst" latency 100ms
    in_node "$k" tc qdisc replace dev "eth$r" root tbf rate "$rate" burst "$burst" latency 100ms
}

up() {
    local nodes=3 rails=1 rate=""
    while [[ $# -gt 0 ]]; do
        case $1 in
        --nodes) nodes=$2 && shift 2 ;;
        --rails) rails=$2 && shift 2 ;;
        --rate) rate=$2 && shift 2 ;;
        *) die "up: unknown option '$1'" ;;
        esac
    done
    if ! [[ $nodes =~ ^[0-9]+$ ]] || ((nodes < 1 || nodes > 64)); then
        die "--nodes $nodes: 1..64"
    fi
    [[ $rails == 1 || $rails == 2 ]] || die "--rails $rails: 1 or 2"
    [[ $(id -u) == 0 ]] || die "needs root (namespaces, bridges)"
    [[ ! -f $dir/state ]] || die "$dir: a cluster is already up here ('down' it first)"
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)

    # The lowest free ID, taken under a lock so clusters started at once differ.
    exec 9>/tmp/tcomms-vcluster.lock
    flock 9
    ID=""
    for ((i = 0; i < 256; i++)); do
        if ! ip link show "tcvb${i}r0" >/dev/null 2>&1; then
            ID=$i
            break
        fi
    done
    [[ -n $ID ]] || die "no free cluster id (256 clusters up?)"
    NODES=$nodes RAILS=$rails
    {
        echo "ID=$ID NODES=$NODES RAILS=$RAILS"
    } >"$dir/state"
    for ((r = 0; r < rails; r++)); do
        local b
        b=$(bridge "$r")
        ip link add "$b" type bridge
        ip link set dev "$b" addrgenmode none
        ip link set dev "$b" up
    done
    flock -u 9

    {
        echo "127.0.0.1 localhost"
        for ((k = 0; k < nodes; k++)); do
            echo "$(address "$k" 0) tcn$k"
            ((rails < 2)) || echo "$(address "$k" 1) tcn$k-r1"
        done
    } >"$dir/hosts"

    for ((k = 0; k < nodes; k++)); do
        mkdir -p "$dir/node$k/cg"
        # a ready mark left by an earlier cluster in DIR would be taken for this anchor's
        rm -f "$dir/node$k/ready"
        # The anchor sets its node's mounts up, then sleeps until killed.
        # shellcheck disable=SC2016 # expanded by the anchor's shell
        unshare --net --uts --mount --propagation private -- bash -c '
            set -e
            hostname "$1"
            mount -t tmpfs -o mode=1777 tcshm /dev/shm
            mount --rbind /sys/fs/cgroup "$2/cg"
            mount -t sysfs sysfs /sys
            mount --move "$2/cg" /sys/fs/cgroup
            mount --bind "$3" /etc/hosts
            ip link set lo up
            touch "$2/ready"
            exec sleep infinity' vcluster-anchor "tcn$k" "$dir/node$k" "$dir/hosts" \
            >"$dir/node$k/anchor.log" 2>&1 &
        local pid=$!
        echo "ANCHOR_$k=$pid" >>"$dir/state"
        for ((t = 0; t < 100; t++)); do
            [[ -f $dir/node$k/ready ]] && break
            kill -0 "$pid" 2>/dev/null || die "node $k's anchor failed: $(cat "$dir/node$k/anchor.log")"
            sleep 0.05
        done
        [[ -f $dir/node$k/ready ]] || die "node $k's anchor did not get ready in 5 s"
        local ns
        ns=$(readlink "/proc/$pid/ns/net") || die "node $k's anchor (pid $pid) ended"
        [[ $ns != "$(own_netns)" ]] || die "node $k's anchor (pid $pid) is in this shell's network namespace"
        echo "NETNS_$k='$ns'" >>"$dir/state"
    done
    load
    for ((k = 0; k < nodes; k++)); do
        for ((r = 0; r < rails; r++)); do
            local v
            v=$(veth "$k" "$r")
            ip link add "$v" type veth peer name "eth$r" netns "$(anchor_of "$k")"
            ip link set dev "$v" addrgenmode none
            ip link set dev "$v" master "$(bridge "$r")" up
            in_node "$k" ip addr add "$(address "$k" "$r")/24" dev "eth$r"
            in_node "$k" ip link set dev "eth$r" up
            [[ -z $rate ]] || shape_link "$k" "$r" "$rate"
        done
    done
    # Node 0 reaches node 1 (a refused connection is an answer).
    for ((t = 0; t < 50 && nodes > 1; t++)); do
        if in_node 0 timeout 1 bash -c "exec 3<>/dev/tcp/$(address 1 0)/9" 2>&1 | grep -q refused; then
            break
        fi
        sleep 0.1
    done
    echo "vcluster: $nodes node(s) up (id $ID, $rails rail(s)) in $dir"
}

kill_node() {
    local k=$1 keep_anchor=$2 t p
    guard_netns "$k"
    for ((t = 0; t < 50; t++)); do
        local left=0
        for p in $(node_pids "$k"); do
            [[ $keep_anchor == 1 && $p == "$(anchor_of "$k")" ]] && continue
            kill -9 "$p" 2>/dev/null || true
            left=1
        done
        ((left)) || return 0
        sleep 0.1
    done
    die "node $k: processes survive SIGKILL: $(node_pids "$k" | tr '\n' ' ')"
}

down() {
    [[ -f $dir/state ]] || return 0
    load
    local k r
    for ((k = 0; k < NODES; k++)); do
        [[ -n $(anchor_of "$k") ]] || continue
        local ns="NETNS_$k"
        if [[ -n ${!ns:-} ]]; then
            kill_node "$k" 0
        else # 'up' failed before the namespace was recorded
            kill -9 "$(anchor_of "$k")" 2>/dev/null || true
        fi
    done
    wait 2>/dev/null || true
    for ((k = 0; k < NODES; k++)); do
        for ((r = 0; r < RAILS; r++)); do
            ip link del "$(veth "$k" "$r")" 2>/dev/null || true
        done
    done
    for ((r = 0; r < RAILS; r++)); do
        ip link del "$(bridge "$r")" 2>/dev/null || true
    done
    mv "$dir/state" "$dir/state.down"
}

check_clean() {
    local f=$dir/state
    [[ -f $f ]] && die "$dir: the cluster is still up"
    [[ -f $dir/state.down ]] || die "$dir: no cluster was brought down here"
    # shellcheck disable=SC1091
    source "$dir/state.down"
    local bad="" k l
    for ((k = 0; k < NODES; k++)); do
        guard_netns "$k"
        [[ -n $(node_pids "$k") ]] && bad+=" node $k has processes: $(node_pids "$k" | tr '\n' ' ');"
    done
    for l in $(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1); do
        [[ $l == tcvb${ID}r* || $l == tcv${ID}n* ]] && bad+=" interface $l;"
    done
    [[ -z $bad ]] || die "left behind:$bad"
    echo "vcluster: nothing left of cluster $ID"
}

case $cmd in
up) up "$@" ;;
run)
    load
    [[ $# -ge 2 ]] || die "run DIR NODE CMD..."
    k=$(node_index "$1")
    shift
    # exec: the caller's pid is the command's, so its signals reach the command
    exec nsenter -t "$(anchor_of "$k")" --net --uts --mount --wd="$PWD" "$@"
    ;;
hosts)
    load
    for ((k = 0; k < NODES; k++)); do echo "tcn$k"; done
    ;;
addr)
    load
    k=$(node_index "$1")
    address "$k" "$(rails_of "${2:-0}")"
    ;;
shape)
    load
    [[ $# -ge 2 ]] || die "shape DIR NODE RATE|off [RAIL]"
    k=$(node_index "$1")
    for r in $(rails_of "${3:-}"); do shape_link "$k" "$r" "$2"; done
    ;;
cut | restore)
    load
    k=$(node_index "$1")
    state=down
    [[ $cmd == restore ]] && state=up
    for r in $(rails_of "${2:-}"); do ip link set dev "$(veth "$k" "$r")" "$state"; done
    ;;
kill)
    load
    kill_node "$(node_index "$1")" 1
    ;;
down) down ;;
check-clean) check_clean ;;
*) die "unknown command '$cmd'" ;;
esac
