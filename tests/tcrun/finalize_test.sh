#!/bin/bash
# A PMIx server whose shutdown never returns (tests/tcrun/finalize_hang.c, preloaded): tcrun
# leaves after its bound (10 s), saying why, with the job's exit status and its temporary
# directory removed. Before, it waited in PMIx_server_finalize for ever, deaf to SIGTERM.
# Args: tcrun pmix_client finalize_hang.so
. tests/tcrun/testlib.sh "$@"
HANG=$PWD/$3
# the preloaded library comes before an ASan build's runtime; it has nothing to check there
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
# tcrun's temporary directory goes here (a path short enough for its sockets), to be checked
export TMPDIR
TMPDIR=$(mktemp -d /tmp/tcfin.XXXXXX)
trap 'rm -rf "$TMPDIR"' EXIT

LD_PRELOAD=$HANG run "$TCRUN" -n 2 "$CLIENT" 2 ok
expect_rc 0
expect_all_ok 2
expect_line "$ERR" "tcrun: the PMIx server did not shut down within 10 s (PMIx_server_finalize did not return); leaving without it"
awk -v e="$ELAPSED" 'BEGIN { exit !(e >= 9.5 && e < 30) }' || fail "ended after ${ELAPSED}s, not about 10 s"
[ -z "$(ls -A "$TMPDIR")" ] || fail "tcrun left $(ls -A "$TMPDIR") in its temporary directory"

# a failed job keeps its status
LD_PRELOAD=$HANG run "$TCRUN" -n 2 "$CLIENT" 2 exit 1 3
expect_rc 3
expect_line "$ERR" "tcrun: the PMIx server did not shut down within 10 s (PMIx_server_finalize did not return); leaving without it"
echo PASS
