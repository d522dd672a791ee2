#!/usr/bin/env bash
# The runtime hands the node's oversubscription to the selection (comm_nodes.c ->
# tc_algo_args_t.oversub): 4 ranks under tcrun choose, for cells where the term changes the
# choice, what tc-sim --algo auto chooses with --oversub set to 4 / the machine's online cores
# (when 4 exceed them; else 0, and the runtime must not count any). tc-sim reads the same model
# (defaults, TC_ALGO_*, TC_TUNING_FILE) through the algo layer the runtime uses.
#   oversub_select_test.sh TCRUN TCPERF TCSIM
set -uo pipefail
tcrun=$1
tcperf=$2
tcsim=$3
n=4
online=$(getconf _NPROCESSORS_ONLN)
oversub=$(awk -v n="$n" -v c="$online" 'BEGIN { if (n > c) printf "%.6f", n / c; else print 0 }')
echo "$n ranks, $online online cores: oversub $oversub"
fail=0
differs=0
# cell: collective, bytes, elements of float32
for cell in "broadcast 64K 16384" "reduce 256K 65536" "all_reduce 64K 16384"; do
    read -r coll bytes count <<<"$cell"
    sim() {
        "$tcsim" --coll "$coll" --algo auto --ranks "$n" --nodes 1 --bytes "$bytes" --oversub "$1" \
            --verify sample --samples 1 | awk 'NR == 1 { sub(":", "", $2); print $2 }'
    }
    want=$(sim "$oversub")
    plain=$(sim 0)
    [ "$want" != "$plain" ] && differs=1
    out=$(TC_LOG=info timeout -k 5 120 "$tcrun" --timeout 100 -n "$n" "$tcperf" --coll "$coll" \
        -b "$bytes" -e "$bytes" -n 1 -w 0 -c 0 2>&1)
    got=$(grep -m1 "rank 0 algo INFO: $coll on $n ranks, $count x 4 bytes: " <<<"$out" |
        sed 's/.*bytes: \([a-z_]*\).*/\1/')
    if [ -z "$want" ] || [ "$got" != "$want" ]; then
        echo "FAIL  $coll $bytes: the runtime chose '${got:-nothing}', tc-sim --oversub $oversub" \
            "'$want' (without: '$plain')"
        tail -n 20 <<<"$out" | sed 's/^/      /'
        fail=1
    else
        echo "ok    $coll $bytes: $got (without oversubscription: $plain)"
    fi
done
# where the node is oversubscribed, at least one cell must tell the two apart
if [ "$oversub" != 0 ] && [ "$differs" = 0 ]; then
    echo "FAIL  no cell's choice depends on oversub $oversub: the test proves nothing"
    fail=1
fi
exit $fail
