#!/bin/bash
# The stores of the job's data under tcrun (libpmix's gds framework). By default the shared-memory
# store ds21 with the hash store beside it, which libpmix needs for the server's own keys. A
# user's list of hash and ds21 that names hash is kept as given; any other is replaced, and tcrun
# says so: ds21 or ds12 alone fail every rank's PMIx_Init ("PMIX ERROR: NOT-SUPPORTED"; ds21 also
# kept the server from ever shutting down), and ds12 with hash loses the ranks' job data (PMIx_Get
# of pmix.nodeid fails). Before, tcrun forced the hash store alone: every rank's heap then held the
# whole job map.
# Args: tcrun pmix_client
. tests/tcrun/testlib.sh "$@"

# The default: every rank is told to use ds21 first, and the data exchange works.
run env -u PMIX_MCA_gds "$TCRUN" -n 2 sh -c 'echo "gds=$PMIX_GDS_MODULE"'
expect_rc 0
expect_line "$OUT" "[0] gds=ds21,hash"
expect_line "$OUT" "[1] gds=ds21,hash"
run env -u PMIX_MCA_gds "$TCRUN" -n 4 "$CLIENT" 4 ok
expect_rc 0
expect_all_ok 4
expect_no_match "$ERR" 'PMIX ERROR'
expect_no_match "$ERR" 'PMIX_MCA_gds'

# Unusable lists: replaced, said once, and the job works.
for gds in ds21 ds12 ds12,hash; do
    PMIX_MCA_gds=$gds run "$TCRUN" -n 2 "$CLIENT" 2 ok
    expect_rc 0
    expect_all_ok 2
    expect_line "$ERR" "tcrun: PMIX_MCA_gds=$gds replaced by ds21,hash: under tcrun's PMIx server libpmix needs the hash store, and ds12 loses the ranks' job data"
    expect_no_match "$ERR" 'PMIX ERROR'
    expect_elapsed_below 10
done

# Lists of hash and ds21 that name hash are kept without a word.
for gds in hash hash,ds21; do
    PMIX_MCA_gds=$gds run "$TCRUN" -n 2 sh -c 'echo "gds=$PMIX_MCA_gds"'
    expect_rc 0
    expect_line "$OUT" "[0] gds=$gds"
    PMIX_MCA_gds=$gds run "$TCRUN" -n 2 "$CLIENT" 2 ok
    expect_rc 0
    expect_all_ok 2
    expect_no_match "$ERR" 'PMIX_MCA_gds'
    expect_no_match "$ERR" 'PMIX ERROR'
done
echo PASS
