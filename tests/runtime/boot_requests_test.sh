#!/usr/bin/env bash
# Creation and dup stay flat in the job size (issue #21 item 4): under tcrun, every rank of a
# 4-rank and of a 16-rank job makes the same number of PMIx_Get calls up to the end of the
# creation's fence (the bootstrap logs its count there; it used to probe every local peer's key
# after the fence: 2 (n - 1) more per rank), and a tc_comm_dup and a tc_comm_split_ranks exchange
# the same bytes into every rank (they used to all-gather 32 bytes per rank, as a split).
#   boot_requests_test.sh TCRUN PROG
set -uo pipefail
tcrun=$1
prog=$2
fail=0

# counts N: prints the distinct per-rank counts of an N-rank job, one per line: "gets G",
# "dup B" and "split_ranks B" (each rank makes two split_ranks: a good one, and one whose lists
# differ)
counts() {
    local out rc
    out=$(TC_LOG=runtime=debug timeout -k 5 120 "$tcrun" -n "$1" "$prog" 2>&1)
    rc=$?
    local ok
    ok=$(grep -c 'boot_requests: ok' <<<"$out")
    local gets dup list
    gets=$(sed -n 's/.*bootstrap(pmix): fence of [0-9]* ranks: SUCCESS; \([0-9]*\) PMIx_Get calls so far.*/gets \1/p' <<<"$out")
    dup=$(sed -n "s/.*comm 'world': dup exchanged \([0-9]*\) bytes into rank.*/dup \1/p" <<<"$out")
    list=$(sed -n "s/.*comm 'world': split_ranks exchanged \([0-9]*\) bytes into rank.*/split_ranks \1/p" <<<"$out")
    if [ $rc -ne 0 ] || [ "$ok" -ne "$1" ] || [ "$(grep -c . <<<"$gets")" -ne "$1" ] ||
        [ "$(grep -c . <<<"$dup")" -ne "$1" ] || [ "$(grep -c . <<<"$list")" -ne $((2 * $1)) ]; then
        echo "FAIL tcrun -n $1 (exit $rc, $ok of $1 ok, $(grep -c . <<<"$gets") fence counts," \
            "$(grep -c . <<<"$dup") dup and $(grep -c . <<<"$list") split_ranks counts):" >&2
        grep -v 'DEBUG' <<<"$out" | head -n 20 >&2
        return 1
    fi
    sort -u <<<"$gets"
    sort -u <<<"$dup"
    sort -u <<<"$list"
}

a=$(counts 4) || fail=1
b=$(counts 16) || fail=1
echo "per rank, PMIx_Get calls to the end of creation and bytes a dup and a split_ranks exchanged:" \
    "4 ranks: $(echo $a), 16 ranks: $(echo $b)"
if [ $fail -eq 0 ] && { [ "$(grep -c . <<<"$a")" -ne 3 ] || [ "$a" != "$b" ]; }; then
    echo "FAIL the count differs between ranks or grows with the job" >&2
    fail=1
fi
[ $fail -eq 0 ] && echo PASS
exit $fail
