#!/usr/bin/env bash
# tc-sim's refusals say why, with status 2: a --nodes that the simulated layout (blocks of
# ceil(P/N) consecutive ranks) does not fill was printed as asked and simulated as another
# count; --bytes that is not whole elements, or less than one element per rank's block,
# "verified" an empty collective; --dtype-size 0, a missing --coll or --ranks printed only
# the usage; --algo bogus was a FAILED verification; --seed -1 was "not a size"; a stray
# argument "needs a value". --algo is optional (auto), and --bytes too for barrier only.
set -uo pipefail
sim=$1
. tests/tools/args_lib.sh "$sim" tc-sim || exit 1 # else every refusal "passes"
accepted() { # accepted WORDS ARGS...: status 0 and WORDS on stdout
    local words=$1 out
    shift
    out=$("$sim" "$@" 2>&1) || fail "tc-sim $*: status $?: $out"
    grep -qF -- "$words" <<<"$out" || fail "tc-sim $*: '$words' not in: $out"
}
ar=(--coll all_reduce --algo ring)
refused "--nodes 3: 4 ranks in blocks of ceil(4/3) = 2 consecutive ranks per node fill 2 nodes, not 3; the nearest node counts they fill are 2 and 4" \
    "${ar[@]}" --ranks 4 --nodes 3 --bytes 1M
refused "--nodes 8: more nodes than the 4 ranks (at most --nodes 4)" "${ar[@]}" --ranks 4 --nodes 8 --bytes 1M
refused "the nearest node counts they fill are 65536 and 131072" \
    "${ar[@]}" --ranks 131072 --nodes 65537 --bytes 1M --verify sample
accepted "all_reduce ring: 5 ranks on 2 node(s)" "${ar[@]}" --ranks 5 --nodes 2 --bytes 1M
accepted "all_reduce ring: 7 ranks on 4 node(s)" "${ar[@]}" --ranks 7 --nodes 4 --bytes 1M
refused "--bytes SIZE is missing (0 for an empty all_reduce)" --coll all_reduce --ranks 4
accepted "barrier " --coll barrier --ranks 4
accepted "all_reduce ring: 4 ranks on 4 node(s), 0 bytes" "${ar[@]}" --ranks 4 --bytes 0
accepted "verified" --coll all_reduce --ranks 4 --bytes 4K # --algo: auto
refused "--bytes 3: not a whole number of 4-byte elements (--dtype-size)" "${ar[@]}" --ranks 4 --bytes 3
refused "--bytes 6: not a whole number of 4-byte elements" --coll all_gather --ranks 2 --bytes 6
refused "--bytes 4: less than one 4-byte element per rank's block (all_gather on 4 ranks: 0 or at least 16 bytes)" \
    --coll all_gather --ranks 4 --bytes 4
refused '--dtype-size="0": out of range (accepted: integers in [1, ' "${ar[@]}" --ranks 4 --bytes 4K --dtype-size 0
refused "--coll COLL is missing" --ranks 4 --bytes 4K
refused "--ranks P is missing" --coll all_reduce --bytes 4K
refused "--algo bogus: no all_reduce algorithm named 'bogus'; valid names: ring, " \
    --coll all_reduce --algo bogus --ranks 4 --bytes 4K
refused "--algo recursive_doubling: all_gather recursive_doubling does not apply to this call (3 ranks)" \
    --coll all_gather --algo recursive_doubling --ranks 3 --bytes 3K
# an in-place all_to_all was selected, then "FAILED ... generator failed" (rc 2; found by an
# independent checker)
refused "no all_to_all algorithm applies to this call (4 ranks): all_to_all in place is not supported" \
    --coll all_to_all --ranks 4 --bytes 16 --in-place
# --help named K, M, G while T is accepted (found by an independent checker)
accepted "SIZE: bytes with an optional K, M, G, T suffix" --help
refused '--seed="-1": out of range (accepted: integers in [0, ' "${ar[@]}" --ranks 4 --bytes 4K --seed -1
refused "unexpected argument 'extra'" "${ar[@]}" --ranks 4 --bytes 4K extra
refused "unknown option --bogus" "${ar[@]}" --ranks 4 --bytes 4K --bogus
echo PASS
