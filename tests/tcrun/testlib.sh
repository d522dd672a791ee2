# Shared helpers of tcrun's shell tests. Source it from the runfiles root:
#   . tests/tcrun/testlib.sh "$@"     (arguments: tcrun path, pmix_client path)
set -u

TCRUN=$1
CLIENT=$2
# Under --config=asan: libpmix's own leaks are suppressed (see tests/lsan_pmix.supp); tcrun's and the
# client's are not. The ranks inherit this through tcrun. No effect without ASan.
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan_pmix.supp:fast_unwind_on_malloc=0:print_suppressions=0"
WORK=$(mktemp -d "${TEST_TMPDIR:-/tmp}/tcrun-test.XXXXXX")
OUT=$WORK/stdout
ERR=$WORK/stderr
RC=0
ELAPSED=0

fail() {
    echo "FAIL: $*" >&2
    echo "--- stdout of the last run:" >&2
    cat "$OUT" >&2 2>/dev/null
    echo "--- stderr of the last run:" >&2
    cat "$ERR" >&2 2>/dev/null
    exit 1
}

now() { date +%s.%N; }

# run CMD...: runs it bounded by 60 s, sets RC and ELAPSED (seconds, decimal).
run() {
    local t0 t1
    t0=$(now)
    timeout -k 5 60 "$@" >"$OUT" 2>"$ERR"
    RC=$?
    t1=$(now)
    ELAPSED=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
    echo "ran: $* -> status $RC in ${ELAPSED}s"
}

expect_rc() {
    [ "$RC" -eq "$1" ] || fail "expected exit status $1, got $RC"
}

# expect_line FILE LINE: FILE has exactly this line.
expect_line() {
    grep -qxF -- "$2" "$1" || fail "missing line in $(basename "$1"): '$2'"
}

# expect_match FILE REGEX: some line of FILE matches the extended regex.
expect_match() {
    grep -qE -- "$2" "$1" || fail "no line of $(basename "$1") matches /$2/"
}

expect_no_match() {
    if grep -qE -- "$2" "$1"; then
        fail "a line of $(basename "$1") matches /$2/ but should not"
    fi
}

# expect_count FILE REGEX N: exactly N lines match.
expect_count() {
    local c
    c=$(grep -cE -- "$2" "$1")
    [ "$c" -eq "$3" ] || fail "expected $3 lines of $(basename "$1") matching /$2/, got $c"
}

# expect_elapsed_below SECONDS
expect_elapsed_below() {
    awk -v e="$ELAPSED" -v m="$1" 'BEGIN { exit !(e < m) }' ||
        fail "took ${ELAPSED}s, expected under $1 s"
}

expect_elapsed_at_least() {
    awk -v e="$ELAPSED" -v m="$1" 'BEGIN { exit !(e >= m) }' ||
        fail "took ${ELAPSED}s, expected at least $1 s"
}

# Every rank r in 0..N-1 printed "[r] rank r of N ok" on stdout.
expect_all_ok() {
    local n=$1 r
    for ((r = 0; r < n; r++)); do
        expect_line "$OUT" "[$r] rank $r of $n ok"
    done
    expect_count "$OUT" '^\[[0-9]+\] rank [0-9]+ of [0-9]+ ok$' "$n"
}
