#!/usr/bin/env bash
# Proves that tests/cluster/vcluster.sh does what it says; every check can fail:
# distinct hostnames, a /dev/shm per node, addresses only in 198.18.0.0/15 and
# none in the root namespace, nodes reaching each other, `shape` (1 Gbit/s
# measured between 0.8 and 1.05), `cut`/`restore`, `kill`, `down` +
# `check-clean`, also after a script that fails midway, a DIR used twice, and a
# state that names the caller's own namespace refused. Needs root.
#   vcluster_selftest.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
vc=$here/vcluster.sh
work=$(mktemp -d /tmp/tc-vcselftest.XXXXXX)
dir=$work/c
pass=0 fail=0
cleanup() {
    "$vc" down "$dir" >/dev/null 2>&1
    "$vc" down "$work/failing" >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT

ok() {
    echo "PASS  $1"
    pass=$((pass + 1))
}
bad() {
    echo "FAIL  $1"
    fail=$((fail + 1))
}
check() { # check NAME CMD...: passes when CMD exits 0
    local name=$1
    shift
    if "$@"; then ok "$name"; else bad "$name"; fi
}
on() { "$vc" run "$dir" "$@"; }

"$vc" up "$dir" --nodes 3 --rails 2 || { echo "FAIL  up"; exit 1; }

hosts=$(for k in 0 1 2; do on "$k" hostname; done | sort -u | tr '\n' ' ')
check "hostnames tcn0 tcn1 tcn2 (got: $hosts)" test "$hosts" = "tcn0 tcn1 tcn2 "

mark=/dev/shm/tc-vcselftest-$$
on 0 touch "$mark"
check "/dev/shm per node: a file made on tcn0 is there on tcn0" on 0 test -e "$mark"
check "... absent on tcn1" on 1 test ! -e "$mark"
check "... absent in the root namespace" test ! -e "$mark"

# every IPv4 address of a node is loopback or in 198.18.0.0/15, eth0 and eth1 have one each
in_range() {
    python3 -c '
import ipaddress, sys
net = ipaddress.ip_network("198.18.0.0/15")
addrs = [ipaddress.ip_interface(a).ip for a in sys.argv[1:]]
ok = addrs and all(a.is_loopback or a in net for a in addrs)
sys.exit(0 if ok and sum(a in net for a in addrs) == 2 else 1)' "$@"
}
for k in 0 1 2; do
    # shellcheck disable=SC2046 # one word per address
    check "tcn$k: addresses only in 198.18.0.0/15, one per rail" \
        in_range $(on "$k" ip -o -4 addr show | awk '{print $4}')
done
id=$(sed -n 's/^ID=\([0-9]*\).*/\1/p' "$dir/state")
root_addrs=$(for l in $(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 |
    grep -E "^tcvb${id}r|^tcv${id}n"); do ip -o addr show dev "$l"; done)
nlinks=$(ip -o link show | awk -F': ' '{print $2}' | grep -cE "^tcvb${id}r|^tcv${id}n")
check "root namespace: $nlinks bridges and veths (want 8), no IPv4/IPv6 address on them" \
    test "$nlinks" -eq 8 -a -z "$root_addrs"

# reachable: a connection is refused (nothing listens on port 9) rather than timing out
reaches() { # reaches FROM ADDR
    on "$1" timeout 3 python3 -c '
import socket, sys
s = socket.socket()
s.settimeout(2)
try:
    s.connect((sys.argv[1], 9))
except ConnectionRefusedError:
    sys.exit(0)
except OSError:
    sys.exit(1)' "$2"
}
for k in 0 1 2; do
    for j in 0 1 2; do
        [ "$k" = "$j" ] && continue
        check "tcn$k reaches tcn$j ($("$vc" addr "$dir" "$j"))" reaches "$k" "tcn$j"
    done
done
check "tcn0 reaches tcn2-r1 (rail 1)" reaches 0 "tcn2-r1"

# shaping: tcn1's link at 1gbit; tcn0 sends for about 1 s, tcn1 measures what arrives
"$vc" shape "$dir" 1 1gbit 0
on 1 timeout 20 python3 -c '
import socket, sys, time
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("0.0.0.0", 5201))
srv.listen(1)
open(sys.argv[1], "w").close()
c, _ = srv.accept()
n, t0 = 0, None
while True:
    b = c.recv(1 << 20)
    if not b:
        break
    if t0 is None:
        t0 = time.monotonic()
    else:
        n += len(b)
print(n * 8 / (time.monotonic() - t0) / 1e9)' "$work/listening" >"$work/rate" 2>&1 &
sink=$!
for _ in $(seq 100); do [ -e "$work/listening" ] && break; sleep 0.05; done
on 0 timeout 10 python3 -c '
import socket, time
s = socket.create_connection(("tcn1", 5201))
buf = b"x" * (1 << 20)
end = time.monotonic() + 1.2
while time.monotonic() < end:
    s.sendall(buf)
s.close()'
wait "$sink"
rate=$(cat "$work/rate")
check "shape 1gbit: measured $rate Gbit/s, between 0.8 and 1.05" \
    python3 -c 'import sys; sys.exit(0 if 0.8 <= float(sys.argv[1]) <= 1.05 else 1)' "$rate"
"$vc" shape "$dir" 1 off

"$vc" cut "$dir" 1
check "cut: tcn1 unreachable from tcn0" bash -c "! $(printf '%q ' "$vc") run $(printf '%q' "$dir") 0 \
    timeout 3 bash -c 'exec 3<>/dev/tcp/tcn1/9' 2>&1 | grep -q refused"
"$vc" restore "$dir" 1
check "restore: tcn1 reachable again" reaches 0 tcn1

on 2 sleep 300 &
sleeper=$!
sleep 0.3
check "a process started on tcn2 runs" kill -0 "$sleeper"
"$vc" kill "$dir" 2
sleep 0.2
check "kill: tcn2's process ended" bash -c "! kill -0 $sleeper 2>/dev/null"
wait "$sleeper" 2>/dev/null
check "kill: tcn2 is still up (hostname)" test "$(on 2 hostname)" = tcn2

"$vc" down "$dir"
check "down, then check-clean" "$vc" check-clean "$dir"

# the same DIR again: the nodes get namespaces of their own (a ready mark left by the
# first cluster once made 'up' record the caller's namespace, and 'down' killed the machine)
"$vc" up "$dir" --nodes 2 >/dev/null
root_ns=$(readlink /proc/$$/ns/net)
check "DIR used twice: the nodes' namespaces are not the root's" \
    test "$(on 0 readlink /proc/self/ns/net)" != "$root_ns" -a \
    "$(on 1 readlink /proc/self/ns/net)" != "$root_ns"
"$vc" down "$dir"
check "... and check-clean after" "$vc" check-clean "$dir"

# a script that fails midway, with the trap the docs ask for
(
    trap '"$vc" down "$work/failing" >/dev/null' EXIT
    "$vc" up "$work/failing" --nodes 2 >/dev/null
    "$vc" run "$work/failing" 1 sleep 300 &
    sleep 0.3
    exit 1
)
check "a failing script left nothing (check-clean)" "$vc" check-clean "$work/failing"

# a state naming the caller's own namespace is refused, not obeyed; run in a throwaway
# namespace, so that a broken guard would only kill that namespace's processes
guard=$work/guard
mkdir -p "$guard"
# shellcheck disable=SC2016 # expanded by the inner shell
out=$(unshare --net bash -c 'printf "ID=250 NODES=1 RAILS=1\nANCHOR_0=%s\nNETNS_0=%s\n" $$ \
    "$(readlink /proc/self/ns/net)" >"$1/state"; "$2" kill "$1" 0' guard "$guard" "$vc" 2>&1)
rc=$?
check "kill refuses a node recorded in the caller's namespace (exit $rc: $out)" \
    bash -c "[ $rc -eq 1 ] && grep -q refusing <<<$(printf '%q' "$out")"

echo "vcluster selftest: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
