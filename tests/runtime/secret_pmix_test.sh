#!/usr/bin/env bash
# The job secret under PMIx launchers (docs/security.md): every rank ends up with the same,
# non-empty secret, a different one per job; under tcrun it is the TC_JOB_SECRET tcrun draws
# (32 hex digits), under mpirun without TC_JOB_SECRET the 32 random bytes rank 0 drew and
# shared through PMIx, and with TC_JOB_SECRET set, that value.
#   secret_pmix_test.sh TCRUN PROG
set -uo pipefail
tcrun=$1
prog=$2
fail=0
unset TC_JOB_SECRET # tcrun draws one per job; under mpirun rank 0 does

# run NAME N EXPECT_LEN CMD...: N ranks must agree; prints rank 0's digest on success
run() {
    local name=$1 n=$2 want_len=$3
    shift 3
    local out rc
    out=$(timeout -k 5 120 "$@" 2>&1)
    rc=$?
    local agree len
    agree=$(grep -c 'same secret as rank 0' <<<"$out")
    len=$(sed -n 's/^\(\[[0-9]*\] \)\{0,1\}secret: \([0-9]*\) bytes.*/\2/p' <<<"$out")
    if [ $rc -ne 0 ] || [ "$agree" -ne "$n" ] || [ "$len" != "$want_len" ]; then
        echo "FAIL $name (exit $rc, $agree of $n agree, $len bytes, want $want_len):" >&2
        echo "$out" >&2
        fail=1
        return 1
    fi
    echo "ok   $name: $n ranks, $len bytes" >&2
    sed -n 's/^.*secret: .*digest \([0-9a-f]*\)$/\1/p' <<<"$out"
}

different() { # different NAME A B
    if [ -z "$2" ] || [ "$2" = "$3" ]; then
        echo "FAIL $1: two jobs have the same secret ($2)" >&2
        fail=1
    else
        echo "ok   $1: two jobs, two secrets" >&2
    fi
}

a=$(run "tcrun -n 2" 2 32 "$tcrun" -n 2 "$prog")
b=$(run "tcrun -n 3" 3 32 "$tcrun" -n 3 "$prog")
different "tcrun" "$a" "$b"

if command -v mpirun >/dev/null 2>&1; then
    mpi=(mpirun --allow-run-as-root --oversubscribe -np 2)
    a=$(run "mpirun -np 2, no TC_JOB_SECRET" 2 32 "${mpi[@]}" "$prog")
    b=$(run "mpirun -np 2 again" 2 32 "${mpi[@]}" "$prog")
    different "mpirun" "$a" "$b"
    TC_JOB_SECRET=given-by-the-user run "mpirun -np 2, TC_JOB_SECRET set" 2 17 \
        "${mpi[@]}" -x TC_JOB_SECRET "$prog" >/dev/null
else
    echo "skip mpirun: not installed" >&2
fi
exit $fail
