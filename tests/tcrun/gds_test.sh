#!/bin/bash
# A user's PMIX_MCA_gds naming one of libpmix's shared-memory stores: tcrun replaces it with the
# hash store and says so. Before, ds21 deadlocked the server's progress thread (the job and tcrun
# never ended, not even on SIGTERM) and ds12 failed every rank's PMIx_Init.
# Args: tcrun pmix_client
. tests/tcrun/testlib.sh "$@"

for gds in ds21 ds12; do
    PMIX_MCA_gds=$gds run "$TCRUN" -n 2 "$CLIENT" 2 ok
    expect_rc 0
    expect_all_ok 2
    expect_line "$ERR" "tcrun: PMIX_MCA_gds=$gds replaced by hash: libpmix's shared-memory stores fail or hang under tcrun's PMIx server"
    expect_no_match "$ERR" 'PMIX ERROR'
done

# hash itself, set by the user, is kept without a word.
PMIX_MCA_gds=hash run "$TCRUN" -n 2 "$CLIENT" 2 ok
expect_rc 0
expect_all_ok 2
expect_no_match "$ERR" 'PMIX_MCA_gds'
echo PASS
