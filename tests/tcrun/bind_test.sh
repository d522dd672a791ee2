#!/bin/bash
# --bind core: each rank runs on one CPU, rank r on the (r mod n)-th of the n CPUs tcrun may
# run on (its own affinity, narrowed here with taskset too); --bind none leaves the ranks where
# tcrun is. Read from each rank's /proc/self/status.
# Args: tcrun pmix_client
. tests/tcrun/testlib.sh "$@"

# "0-2,5" -> "0 1 2 5"
expand_cpus() {
    local part out=()
    for part in ${1//,/ }; do
        if [[ $part == *-* ]]; then
            out+=($(seq "${part%-*}" "${part#*-}"))
        else
            out+=("$part")
        fi
    done
    echo "${out[@]}"
}

mine=$(awk '/^Cpus_allowed_list:/ {print $2}' /proc/self/status)
cpus=($(expand_cpus "$mine"))
n=${#cpus[@]}
[ "$n" -ge 1 ] || fail "no CPUs in '$mine'"
show='grep Cpus_allowed_list /proc/self/status'

ranks=$((n + 3)) # every CPU taken, and some twice
run "$TCRUN" --bind core -n "$ranks" sh -c "$show"
expect_rc 0
for ((r = 0; r < ranks; r++)); do
    expect_line "$OUT" "[$r] Cpus_allowed_list:	${cpus[r % n]}"
done

run "$TCRUN" --bind=none -n 2 sh -c "$show"
expect_rc 0
expect_count "$OUT" "^\[[01]\] Cpus_allowed_list:	$mine\$" 2

# tcrun itself narrowed to its last CPU: every rank there
last=${cpus[n - 1]}
run taskset -c "$last" "$TCRUN" --bind core -n 3 sh -c "$show"
expect_rc 0
expect_count "$OUT" "^\[[012]\] Cpus_allowed_list:	$last\$" 3
echo PASS
