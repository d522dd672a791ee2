#!/usr/bin/env bash
# Hot paths allocate nothing per operation: rounds of an asynchronous 8-byte all-reduce and an
# asynchronous send and receive between 2 ranks, each waited for and freed, make no heap
# allocation once warm (freed works stay as spares of their communicator, freed work objects
# with the API; a single send or receive runs no schedule). A check without a stopwatch: each
# rank runs under valgrind, which counts every allocation ("total heap usage: A allocs"); two
# jobs of FEW and MANY rounds must differ by fewer than LIMIT allocations per rank (start-up
# and teardown are the same in both).
#   alloc_check.sh BIN
# BIN holds tools/tcrun/tcrun and tests/integration/small_test (nothing is built here). Exits 0
# on success, 1 when the difference is over the limit, 2 when the check cannot run.
set -uo pipefail
bin=${1:?bin directory}
few=200
many=1200
limit=100
tcrun=$bin/tools/tcrun/tcrun
prog=$bin/tests/integration/small_test
if ! command -v valgrind >/dev/null; then
    echo "alloc_check: valgrind is not installed" >&2
    exit 2
fi
# allocs N: prints each rank's allocation count for a job of N operations, rank order
allocs() {
    local dir
    dir=$(mktemp -d /tmp/tc-alloc.XXXXXX)
    # shellcheck disable=SC2016 # expanded by each rank's shell
    if ! timeout -k 5 300 "$tcrun" -n 2 sh -c \
        'exec valgrind --tool=memcheck --leak-check=no --log-file="$0/vg.$PMIX_RANK" "$1" async "$2"' \
        "$dir" "$prog" "$1" >"$dir/out" 2>&1 || [ "$(grep -c ', 0 failures' "$dir/out")" -ne 2 ]; then
        echo "alloc_check: the job of $1 operations failed:" >&2
        tail -n 20 "$dir/out" >&2
        return 2
    fi
    for r in 0 1; do
        sed -n 's/.*total heap usage: \([0-9,]*\) allocs.*/\1/p' "$dir/vg.$r" | tr -d ,
    done
    rm -rf "$dir"
}
a=$(allocs $few) || exit 2
b=$(allocs $many) || exit 2
read -r a0 a1 <<<"$(echo $a)"
read -r b0 b1 <<<"$(echo $b)"
fail=0
for r in 0 1; do
    x=$([ $r -eq 0 ] && echo "$a0" || echo "$a1")
    y=$([ $r -eq 0 ] && echo "$b0" || echo "$b1")
    if [ -z "$x" ] || [ -z "$y" ]; then
        echo "alloc_check: no allocation count from valgrind for rank $r" >&2
        exit 2
    fi
    d=$((y - x))
    echo "rank $r: $x allocations with $few rounds (asynchronous all-reduce, send, receive)," \
        "$y with $many: $d for $((many - few)) more rounds"
    [ "$d" -ge "$limit" ] && fail=1
done
[ $fail -eq 0 ] && echo "PASS  alloc_check" || echo "FAIL  alloc_check (limit $limit)"
exit $fail
