#!/bin/sh
# Runs the two processes of transport_standalone against each other through a temporary directory.
set -eu
bin="$1"
dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/tc-example.XXXXXX")
trap 'rm -rf "$dir"' EXIT
export TC_SOCKET_IFNAME=lo
timeout 60 "$bin" 0 "$dir" & p0=$!
timeout 60 "$bin" 1 "$dir" & p1=$!
rc=0
wait "$p0" || rc=1
wait "$p1" || rc=1
exit "$rc"
