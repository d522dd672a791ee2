#!/bin/bash
# tcrun -n N with a PMIx client that checks job size, local rank, hostname, node id and an
# exchange of values keyed by rank through Put/Commit/Fence(collect)/Get; and with a plain
# (non-PMIx) program whose rank is known from the environment PMIx sets up.
# Args: tcrun pmix_client N
. tests/tcrun/testlib.sh "$@"
N=$3

# A short private TMPDIR: tcrun must put its PMIx temp dir there and remove it at exit.
PRIV=$(mktemp -d /tmp/tcrun-tmp.XXXXXX)
trap 'rm -rf "$PRIV"' EXIT

TMPDIR=$PRIV run "$TCRUN" -n "$N" -v "$CLIENT" "$N" ok
expect_rc 0
expect_all_ok "$N"
expect_no_match "$OUT" '^\[[0-9]+\] .*(FAIL|failed)'
expect_match "$ERR" "^tcrun: registered namespace tcrun\.[0-9]+: $N ranks on "
for ((r = 0; r < N; r++)); do
    expect_line "$ERR" "tcrun: rank $r connected to the PMIx server"
    expect_line "$ERR" "tcrun: rank $r called PMIx_Finalize"
done
expect_no_match "$ERR" '^tcrun: rank [0-9]+ \(pid'
[ -z "$(ls -A "$PRIV")" ] || fail "tcrun left files in its temp dir: $(ls -A "$PRIV")"

# Not a PMIx client: output prefixes must match the rank PMIx gives each child.
run "$TCRUN" -n "$N" sh -c 'echo "out $PMIX_RANK $TC_LAUNCHER"; echo "err $PMIX_RANK" >&2'
expect_rc 0
for ((r = 0; r < N; r++)); do
    expect_line "$OUT" "[$r] out $r tcrun"
    expect_line "$ERR" "[$r] err $r"
done
expect_count "$OUT" '^\[' "$N"
expect_count "$ERR" '^\[' "$N"

# A rank inherits stdin, stdout and stderr only: neither descriptors tcrun was given (fd 7,
# opened here without close-on-exec) nor tcrun's own (the PMIx server's sockets, which at
# hundreds of ranks made every rank hold hundreds).
exec 7</dev/null
run "$TCRUN" -n "$N" ls -m /proc/self/fd
exec 7<&-
expect_rc 0
for ((r = 0; r < N; r++)); do
    expect_line "$OUT" "[$r] 0, 1, 2, 3" # 3: the directory ls is reading
done
echo PASS
