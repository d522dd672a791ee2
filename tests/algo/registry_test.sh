#!/bin/sh
# The registry is generated from the TC_ALGO_DEFINE lines: the linked table
# (registry_dump) is exactly those lines, in order; a file added to the
# sources is picked up where its priority puts it; malformed, duplicate and
# unknown definitions fail the generation with the file and line.
set -u

gen=algo/registry_gen.sh
hdr=algo/include/tcomms/algo/schedule.h
inc=algo/src/registry_table.inc
dump=tests/algo/registry_dump
work=${TEST_TMPDIR:-/tmp}/registry_test.$$
fails=0

fail() {
    echo "FAIL: $*" >&2
    fails=$((fails + 1))
}

# "COLL name" of a generated table, in order
entries() {
    sed -n 's/^TC_ALGO_ENTRY(\([A-Z_]*\), \([a-z0-9_]*\),.*/\1 \2/p' "$1"
}

mkdir -p "$work/src" || exit 1
srcs=$(ls algo/src/*.c)
[ -n "$srcs" ] || { echo "no sources in the runfiles" >&2; exit 1; }

# 1. The script on the sources gives the table that was built and linked.
sh "$gen" "$hdr" $srcs >"$work/table.inc" || fail "generation on the real sources"
cmp -s "$work/table.inc" "$inc" || fail "the built $inc differs from the script's output"
"$dump" >"$work/linked.txt" || fail "registry_dump"
entries "$work/table.inc" >"$work/defined.txt"
cmp -s "$work/defined.txt" "$work/linked.txt" || {
    fail "the linked table is not the TC_ALGO_DEFINE lines:"
    diff "$work/defined.txt" "$work/linked.txt" >&2
}
ndefs=$(cat $srcs | grep -c '^TC_ALGO_DEFINE(')
nlinked=$(wc -l <"$work/linked.txt")
[ "$ndefs" -eq "$nlinked" ] || fail "$ndefs TC_ALGO_DEFINE lines, $nlinked linked entries"
[ "$nlinked" -ge 29 ] || fail "only $nlinked entries"
# today's defaults stay the first of their collective
for d in "ALL_REDUCE ring" "REDUCE binomial_tree" "BROADCAST binomial_tree" "ALL_GATHER ring" \
    "REDUCE_SCATTER ring" "ALL_TO_ALL pairwise" "GATHER binomial_tree" "SCATTER binomial_tree" \
    "BARRIER bruck"; do
    first=$(grep "^${d%% *} " "$work/linked.txt" | head -n 1)
    [ "$first" = "$d" ] || fail "default of ${d%% *} is '$first', not '$d'"
done

# 2. A new file is picked up, where its priority says, over two lines; a
#    mention in a comment or indented is not a definition.
cp $srcs "$work/src/" || exit 1
cat >"$work/src/all_reduce_zz_new.c" <<'XEOF'
/* TC_ALGO_DEFINE(ALL_REDUCE, in_comment, x, NULL, 1); */
#include "algo_internal.h"

TC_ALGO_DEFINE(ALL_REDUCE, zz_new, all_reduce_zz_new, tc_algo_applies_zz,
               15);
    TC_ALGO_DEFINE(ALL_REDUCE, indented, x, NULL, 2);
XEOF
sh "$gen" "$hdr" "$work"/src/*.c >"$work/new.inc" || fail "generation with a new file"
entries "$work/new.inc" | grep '^ALL_REDUCE' | head -n 3 >"$work/ar.txt"
printf 'ALL_REDUCE ring\nALL_REDUCE zz_new\nALL_REDUCE recursive_doubling\n' >"$work/ar_want.txt"
cmp -s "$work/ar.txt" "$work/ar_want.txt" || fail "new file not placed by priority: $(cat "$work/ar.txt")"
grep -q '^TC_ALGO_ENTRY(ALL_REDUCE, zz_new, all_reduce_zz_new, tc_algo_applies_zz)' "$work/new.inc" ||
    fail "new entry's fields"
grep -q '^TC_ALGO_APPLIES(tc_algo_applies_zz)$' "$work/new.inc" || fail "new applies not declared"
[ "$(entries "$work/new.inc" | wc -l)" -eq $((nlinked + 1)) ] || fail "comment/indented lines counted"

# 3. Bad definitions fail with the file and line.
expect_error() { # file-content expected-stderr-fragment
    rm -f "$work/src/all_reduce_zz_new.c" "$work/src/bad.c"
    printf '%s\n' "$1" >"$work/src/bad.c"
    if sh "$gen" "$hdr" "$work"/src/*.c >"$work/bad.inc" 2>"$work/err.txt"; then
        fail "accepted: $1"
    elif ! grep -qF "$2" "$work/err.txt"; then
        fail "for '$1' expected '$2', got: $(cat "$work/err.txt")"
    fi
}
expect_error 'TC_ALGO_DEFINE(ALL_REDUCE, ring, all_reduce_ring2, NULL, 99);' \
    'bad.c:1: TC_ALGO_DEFINE: ALL_REDUCE ring already defined at all_reduce_ring.c:'
expect_error 'TC_ALGO_DEFINE(ALL_REDUCE, other, all_reduce_other, NULL, 10);' \
    'bad.c:1: TC_ALGO_DEFINE: ALL_REDUCE priority 10 already used at all_reduce_ring.c:'
expect_error 'TC_ALGO_DEFINE(ALLREDUCE, x, all_reduce_x, NULL, 70);' \
    'bad.c:1: TC_ALGO_DEFINE: unknown collective "ALLREDUCE"'
expect_error 'TC_ALGO_DEFINE(ALL_REDUCE, x, all_reduce_x, NULL);' \
    'bad.c:1: TC_ALGO_DEFINE: expected 5 arguments, got 4'
expect_error 'TC_ALGO_DEFINE(ALL_REDUCE, x, all_reduce_x, NULL, -1);' \
    'bad.c:1: TC_ALGO_DEFINE: priority "-1" is not a non-negative integer'
expect_error 'TC_ALGO_DEFINE(ALL_REDUCE, X, all_reduce_x, NULL, 70);' \
    'bad.c:1: TC_ALGO_DEFINE: name "X" is not'
expect_error 'TC_ALGO_DEFINE(ALL_REDUCE, x, all_reduce_x, my_applies, 70);' \
    'bad.c:1: TC_ALGO_DEFINE: applies "my_applies" is neither NULL nor a tc_ function'
expect_error "$(printf '\n\nTC_ALGO_DEFINE(ALL_REDUCE, x, all_reduce_x, NULL, 70)\n')" \
    'bad.c:3: TC_ALGO_DEFINE: no ";" before the end of the file'
rm -f "$work/src"/*.c
printf 'int x;\n' >"$work/src/none.c"
if sh "$gen" "$hdr" "$work/src/none.c" >/dev/null 2>"$work/err.txt"; then
    fail "accepted sources without definitions"
fi

rm -rf "$work"
if [ "$fails" -ne 0 ]; then
    echo "$fails failure(s)" >&2
    exit 1
fi
echo "registry: $nlinked entries, generated table = TC_ALGO_DEFINE lines"
