#!/usr/bin/env bash
# Creation's PMIx requests stay flat in the job size (issue #21 item 4): under tcrun, every rank
# of a 4-rank and of a 16-rank job makes the same number of PMIx_Get calls up to the end of the
# creation's fence (the bootstrap logs its count there). It used to probe every local peer's key
# after the fence: 2 (n - 1) more per rank.
#   boot_requests_test.sh TCRUN PROG
set -uo pipefail
tcrun=$1
prog=$2
fail=0

# gets N: prints the distinct per-rank counts of an N-rank job, one per line
gets() {
    local out rc
    out=$(TC_LOG=runtime=debug timeout -k 5 120 "$tcrun" -n "$1" "$prog" 2>&1)
    rc=$?
    local ok
    ok=$(grep -c 'boot_requests: ok' <<<"$out")
    local counts
    counts=$(sed -n 's/.*bootstrap(pmix): fence of [0-9]* ranks: SUCCESS; \([0-9]*\) PMIx_Get calls so far.*/\1/p' <<<"$out")
    if [ $rc -ne 0 ] || [ "$ok" -ne "$1" ] || [ "$(wc -l <<<"$counts")" -ne "$1" ]; then
        echo "FAIL tcrun -n $1 (exit $rc, $ok of $1 ok, $(grep -c . <<<"$counts") counts):" >&2
        grep -v 'DEBUG' <<<"$out" | head -n 20 >&2
        fail=1
        return
    fi
    sort -u <<<"$counts"
}

a=$(gets 4)
b=$(gets 16)
echo "PMIx_Get calls per rank up to the end of creation: 4 ranks: $(echo $a), 16 ranks: $(echo $b)"
if [ $fail -eq 0 ] && { [ "$(grep -c . <<<"$a")" -ne 1 ] || [ "$a" != "$b" ]; }; then
    echo "FAIL the count differs between ranks or grows with the job" >&2
    fail=1
fi
[ $fail -eq 0 ] && echo PASS
exit $fail
