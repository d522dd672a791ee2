/* A PMIx client for tcrun's tests. Usage: pmix_client EXPECTED_N MODE [ARGS]
 *
 * Every mode first checks what tcrun registered against EXPECTED_N (from the test script) and
 * does a data exchange: PMIx_Put of a value keyed by rank, PMIx_Commit, PMIx_Fence with
 * PMIX_COLLECT_DATA, then PMIx_Get of every other rank's value. Modes:
 *   ok              print "rank R of N ok" and finalize
 *   exit R S        like ok, then rank R exits with status S
 *   crash R         rank R raises SIGKILL; the others sleep until they are stopped
 *   stubborn R      like crash, but the others also ignore SIGTERM (needs SIGKILL)
 *   hang            every rank sleeps until it is stopped
 *   abort R S       rank R calls PMIx_Abort(S); the others sleep
 *   partial         writes a line in two pieces, and a last line without newline
 * In the modes that end abnormally, every rank prints its "ok" line before a second fence, so
 * that all of them are written before any rank fails. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pmix.h>

static pmix_proc_t me;

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "pmix_client rank %d: ", (int)me.rank);                                    \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, "\n");                                                                     \
        exit(99);                                                                                  \
    } while (0)

static uint64_t value_of(uint32_t rank)
{
    return 0x5ca1ab1e00000000ull + (uint64_t)rank * 7919u + 13u;
}

static pmix_value_t *get_job(const char *key, pmix_rank_t rank)
{
    pmix_proc_t p;
    PMIX_PROC_LOAD(&p, me.nspace, rank);
    pmix_value_t *v = NULL;
    pmix_status_t rc = PMIx_Get(&p, key, NULL, 0, &v);
    if (rc != PMIX_SUCCESS || v == NULL) {
        FAIL("PMIx_Get(%s, rank %d) failed: %s", key, (int)rank, PMIx_Error_string(rc));
    }
    return v;
}

static uint32_t get_u32(const char *key, pmix_rank_t rank)
{
    pmix_value_t *v = get_job(key, rank);
    uint32_t out;
    if (v->type == PMIX_UINT32) {
        out = v->data.uint32;
    } else if (v->type == PMIX_UINT16) {
        out = v->data.uint16;
    } else {
        FAIL("PMIx_Get(%s): unexpected type %d", key, (int)v->type);
    }
    PMIX_VALUE_RELEASE(v);
    return out;
}

/* The checks and the exchange every mode does. Returns the job size. */
static uint32_t check_and_exchange(uint32_t expected_n)
{
    const char *launcher = getenv("TC_LAUNCHER");
    if (launcher == NULL || strcmp(launcher, "tcrun") != 0) {
        FAIL("TC_LAUNCHER is '%s', expected 'tcrun'", launcher ? launcher : "(unset)");
    }
    uint32_t n = get_u32(PMIX_JOB_SIZE, PMIX_RANK_WILDCARD);
    if (n != expected_n) {
        FAIL("PMIX_JOB_SIZE is %u, expected %u", n, expected_n);
    }
    if (me.rank >= n) {
        FAIL("rank %u is not below the job size %u", me.rank, n);
    }
    uint32_t local_size = get_u32(PMIX_LOCAL_SIZE, PMIX_RANK_WILDCARD);
    if (local_size != n) {
        FAIL("PMIX_LOCAL_SIZE is %u, expected %u", local_size, n);
    }
    uint32_t local_rank = get_u32(PMIX_LOCAL_RANK, me.rank);
    if (local_rank != me.rank) {
        FAIL("PMIX_LOCAL_RANK is %u, expected %u (one node)", local_rank, me.rank);
    }
    uint32_t nodeid = get_u32(PMIX_NODEID, me.rank);
    if (nodeid != 0) {
        FAIL("PMIX_NODEID is %u, expected 0", nodeid);
    }
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    pmix_value_t *hv = get_job(PMIX_HOSTNAME, me.rank);
    if (hv->type != PMIX_STRING || strcmp(hv->data.string, host) != 0) {
        FAIL("PMIX_HOSTNAME is '%s', expected '%s'",
             hv->type == PMIX_STRING ? hv->data.string : "(not a string)", host);
    }
    PMIX_VALUE_RELEASE(hv);

    char key[64];
    snprintf(key, sizeof(key), "tcrun.test.%u", me.rank);
    pmix_value_t val;
    uint64_t mine = value_of(me.rank);
    PMIX_VALUE_LOAD(&val, &mine, PMIX_UINT64);
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &val);
    if (rc != PMIX_SUCCESS) {
        FAIL("PMIx_Put failed: %s", PMIx_Error_string(rc));
    }
    if ((rc = PMIx_Commit()) != PMIX_SUCCESS) {
        FAIL("PMIx_Commit failed: %s", PMIx_Error_string(rc));
    }
    pmix_info_t collect;
    bool yes = true;
    PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    if ((rc = PMIx_Fence(NULL, 0, &collect, 1)) != PMIX_SUCCESS) {
        FAIL("PMIx_Fence failed: %s", PMIx_Error_string(rc));
    }
    PMIX_INFO_DESTRUCT(&collect);
    for (uint32_t r = 0; r < n; r++) {
        if (r == me.rank) {
            continue;
        }
        snprintf(key, sizeof(key), "tcrun.test.%u", r);
        pmix_value_t *v = get_job(key, r);
        if (v->type != PMIX_UINT64 || v->data.uint64 != value_of(r)) {
            FAIL("value of rank %u is %" PRIx64 " (type %d), expected %" PRIx64, r, v->data.uint64,
                 (int)v->type, value_of(r));
        }
        PMIX_VALUE_RELEASE(v);
    }
    return n;
}

static void barrier(void)
{
    pmix_status_t rc = PMIx_Fence(NULL, 0, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        FAIL("PMIx_Fence (barrier) failed: %s", PMIx_Error_string(rc));
    }
}

static void sleep_forever(void)
{
    for (;;) {
        pause();
    }
}

static int arg_int(int argc, char **argv, int i)
{
    if (i >= argc) {
        fprintf(stderr, "pmix_client: missing argument %d\n", i);
        exit(98);
    }
    return atoi(argv[i]);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: pmix_client EXPECTED_N MODE [ARGS]\n");
        return 98;
    }
    uint32_t expected_n = (uint32_t)atoi(argv[1]);
    const char *mode = argv[2];
    setvbuf(stdout, NULL, _IONBF, 0);

    pmix_status_t rc = PMIx_Init(&me, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "pmix_client: PMIx_Init failed: %s\n", PMIx_Error_string(rc));
        return 97;
    }
    uint32_t n = check_and_exchange(expected_n);
    int rank = (int)me.rank;

    if (strcmp(mode, "ok") == 0) {
        printf("rank %d of %u ok\n", rank, n);
    } else if (strcmp(mode, "exit") == 0) {
        printf("rank %d of %u ok\n", rank, n);
        barrier();
        if (rank == arg_int(argc, argv, 3)) {
            PMIx_Finalize(NULL, 0);
            return arg_int(argc, argv, 4);
        }
    } else if (strcmp(mode, "crash") == 0 || strcmp(mode, "stubborn") == 0) {
        if (strcmp(mode, "stubborn") == 0) {
            signal(SIGTERM, SIG_IGN);
        }
        printf("rank %d of %u ok\n", rank, n);
        barrier();
        if (rank == arg_int(argc, argv, 3)) {
            raise(SIGKILL);
        }
        sleep_forever();
    } else if (strcmp(mode, "hang") == 0) {
        printf("rank %d of %u ok\n", rank, n);
        sleep_forever();
    } else if (strcmp(mode, "abort") == 0) {
        printf("rank %d of %u ok\n", rank, n);
        barrier();
        if (rank == arg_int(argc, argv, 3)) {
            char msg[64];
            snprintf(msg, sizeof(msg), "test abort from rank %d", rank);
            rc = PMIx_Abort(arg_int(argc, argv, 4), msg, NULL, 0);
            fprintf(stderr, "rank %d: PMIx_Abort returned %s\n", rank, PMIx_Error_string(rc));
        }
        sleep_forever();
    } else if (strcmp(mode, "partial") == 0) {
        printf("first-%d-", rank);
        usleep(100 * 1000);
        printf("second-%d\n", rank);
        fprintf(stderr, "err-line-%d\n", rank);
        fprintf(stderr, "err-tail-%d", rank); /* no newline: flushed by tcrun at the end */
        printf("out-tail-%d", rank);
    } else {
        fprintf(stderr, "pmix_client: unknown mode '%s'\n", mode);
        return 98;
    }
    rc = PMIx_Finalize(NULL, 0);
    if (rc != PMIX_SUCCESS) {
        FAIL("PMIx_Finalize failed: %s", PMIx_Error_string(rc));
    }
    return 0;
}
