/*
 * A rank missing from tc_comm_create is named by the survivors' error (it was
 * "PMIx_Fence over 3 ranks failed: PARTIAL SUCCESS", naming nobody). Run under
 * tcrun --keep-going by run_fault.sh:
 *
 *   create_missing_test exit|kill VICTIM TIMEOUT_MS
 *
 * exit: rank VICTIM (read from PMIX_RANK) exits with status 3 before calling
 * tc_comm_create; kill: it calls tc_comm_create with
 * TC_FAULT_INJECT=create:rank=VICTIM and dies (SIGKILL) inside it, after
 * joining the launcher's PMIx server, before the fence. The others create with
 * a TIMEOUT_MS timeout; each prints "create_missing: OK <status>: <detail>"
 * when the creation fails and the detail names "rank VICTIM", else
 * "create_missing: FAIL ...", and exits 0 or 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/tcomms.h"

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[1], "exit") != 0 && strcmp(argv[1], "kill") != 0)) {
        fprintf(stderr, "usage: create_missing_test exit|kill VICTIM TIMEOUT_MS\n");
        return 2;
    }
    const char *r = getenv("PMIX_RANK");
    int me = r ? atoi(r) : -1, victim = atoi(argv[2]);
    if (me < 0) {
        fprintf(stderr, "create_missing: FAIL: no PMIX_RANK (run under tcrun)\n");
        return 1;
    }
    char spec[64];
    snprintf(spec, sizeof(spec), "create:rank=%d", victim);
    if (me == victim && strcmp(argv[1], "exit") == 0)
        return 3;
    setenv("TC_FAULT_INJECT", spec, 1); /* ignored by every rank but the victim */
    tc_comm_opts_t opts = TC_COMM_OPTS_INIT;
    opts.timeout_ms = atoi(argv[3]);
    tc_comm_t *comm = NULL;
    tc_status_t st = tc_comm_create(&opts, &comm);
    char want[32];
    snprintf(want, sizeof(want), "rank %d", victim);
    if (st == TC_OK) {
        printf("create_missing: FAIL rank %d: tc_comm_create succeeded without rank %d\n", me,
               victim);
        tc_comm_destroy(comm);
        return 1;
    }
    const char *detail = tc_last_error();
    int ok = strstr(detail, want) != NULL;
    printf("create_missing: %s rank %d: %s: %s\n", ok ? "OK" : "FAIL", me, tc_status_string(st),
           detail);
    return ok ? 0 : 1;
}
